// --sync-bn: BatchNorm whose training statistics (mean, variance) and whose backward sums are taken
// over the whole global batch, across every rank of the job, as torch.nn.SyncBatchNorm. The weight
// and bias gradients stay per rank (the gradient all-reduce averages them like any parameter's), so
// with YOLOv5's loss x world-size scaling a 2-rank step computes what one process computes on the
// whole batch. Running statistics use the global count (unbiased variance), so every rank keeps the
// same ones. Evaluation mode is the plain BatchNorm.
#pragma once
#include <torch/torch.h>

#include "distributed/process_group.h"

namespace kestrel {

// BatchNorm2d's training forward with statistics over all ranks (the forward of one layer).
torch::Tensor sync_batch_norm(torch::nn::BatchNorm2dImpl& bn, const torch::Tensor& x, ProcessGroup& group);

// Routes every Conv's BatchNorm of `model` through sync_batch_norm; returns how many. The group must
// outlive the model's training.
int use_sync_batch_norm(torch::nn::Module& model, ProcessGroup& group);

}  // namespace kestrel
