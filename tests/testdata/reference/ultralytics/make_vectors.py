"""Writes the Ultralytics test vectors of this folder: numbers computed by the pinned `ultralytics`
package (its own DetectionModel and parse_model), as JSON, for Kestrel's parity tests. Data, not code:
nothing of Ultralytics is copied into Kestrel.

  pip install ultralytics==8.4.190 ultralytics-thop   (beside the torch Kestrel builds against)
  pip install --target DIR46 opencv-python-headless==4.6.0.66 numpy==1.26.4   (the OpenCV Kestrel links)
  PYTHONPATH=DIR46 YOLO_OFFLINE=true python3 make_vectors.py [--out DIR]

The augment_*.json bytes depend on the OpenCV that computes them: with 5.1, warpAffine differs by 1 in
some pixels. The other files do not depend on it.

Files:
- models.json: per built-in yaml (yolov8, yolo11, yolov5u at each scale) the leaf-module count,
  parameters, gradients and GFLOPs at 640 as model_info() reports them, the strides, the head's
  `legacy` flag, and parse_model's log rows (from, n, params, module, arguments).
- forward_<model>.json: the model built with nc=3, every weight set by `fill` below (no random
  stream, so Kestrel sets the same numbers), a fixed 64x96 input; in eval mode the decoded output
  [1, 4+nc, N], the head's raw box and class maps, and the sum and absolute sum of each layer's
  output (to locate a divergence); in train mode the raw maps and model.0.bn's running statistics
  after that one forward; and per output how far Ultralytics' own float32 result is from its
  float64 one (fp32_error), the scale of rounding a float32 re-implementation is judged by.

- loss_<case>.json: v8DetectionLoss on seeded raw head maps (nc=3, 64x96 input) and given targets: the
  three loss terms, the gradients of their sum, and the assigner's foreground mask, matched box index
  and target boxes.

- metrics_ap_small.json, metrics_ap_large.json: ap_per_class on the inputs of the YOLOv5 vectors of
  the same names (its AP ends the precision/recall curve at the last recall reached).
- nms_val.json, nms_predict.json: non_max_suppression of a seeded anchor-free output (no
  objectness) at val and predict settings, in the layout of the YOLOv5 NMS vectors.
- tiny_best.pt, tiny_best.json: a checkpoint in the format Ultralytics' trainer writes (save_model's
  keys, then its own strip_optimizer, as best.pt is left at the end of a run) of a small 2-class model
  in Ultralytics' yaml format (TINY_YAML), its weights set by `fill` and stored in fp16 as the trainer
  stores them; the json holds the decoded output on the fixed input of the model read back from the
  file (what `YOLO(tiny_best.pt)` computes), and its fp32_error as for the forward vectors.
- musgd.json: ultralytics.optim.MuSGD. `newton_schulz`: zeropower_via_newtonschulz5 (bf16) of fixed
  matrices; `steps`: three steps of one optimizer (a Muon group whose matrices share, pad and split
  its batched calls, a boosted Muon group, SGD groups for biases and norm weights, a parameter without
  a gradient) on given gradients, lr and momentum changing between steps, with the parameters after
  each; `groups_<model>`: BaseTrainer.build_optimizer(name="MuSGD") on that model with nc=3, its eight
  groups' parameter names and options.

- augment_hsv.json: ultralytics.data.augment.RandomHSV (hsv_h, hsv_s, hsv_v at their defaults and a
  large hue gain) on the input images of the YOLOv5 vectors of the same name, its three uniform(-1, 1)
  draws given (numpy's uniform replaced for the call), and the resulting images. The bytes come from
  the OpenCV of the generating environment (`opencv` in the file).

- augment_perspective.json: ultralytics.data.augment.RandomPerspective on a 48x64 image (pixels from
  `pattern`, which Kestrel's test recomputes) and seeded boxes (output the input's size), a 40x64 one
  placed into 64x64 (a sample without mosaic: the warp letterboxes it), and a 96x96 one (a mosaic
  canvas: output 48x48), with and without rotation and shear, and one perspective case; its eight
  random.uniform draws given (random.uniform replaced for the call); the matrix, the output image's
  sha256 and the boxes it keeps, with their indices.

- augment_labels.json: RandomFlip (vertical, then horizontal, each at p 0 or 1) and Format on pixel
  corners in a 48x64 image (some on its edges), the four flip combinations: the normalized xywh
  labels a batch gets.

schedule_demo.json is not written here: it is the lr columns of the results.csv of a real run of
Ultralytics' trainer, described in its own `meta`.

The pinned ultralytics-thop (2.2.3) profiles in eval mode and counts matrix products: the GFLOPs
include the DFL expectation and YOLO11's attention, and nothing for nearest upsampling.
"""
import argparse
import copy
import json
import logging
import math
import platform
import re

import numpy as np
import torch
import ultralytics
from ultralytics.nn.tasks import DetectionModel
from ultralytics.utils.torch_utils import get_flops


def tensor(t):
    t = t.detach().contiguous()
    return {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
            # float32 as the shortest decimal that reads back to the same float32; float64 as Python's repr
            "data": [float(str(np.float32(v))) if t.dtype == torch.float32 else float(v) if t.is_floating_point() else int(v)
                     for v in t.flatten().tolist()]}


def fill_value(name, shape, t_index, i):
    """The value of element i of the t_index-th tensor (sorted names) of a state dict."""
    u = ((i * 2654435761 + (t_index + 1) * 97531) & 0xFFFFFFFF) / 4294967296.0
    if name.endswith("running_var"):
        return 0.5 + u
    if name.endswith("bn.weight"):  # gains of 1-3 keep activations from fading through the layers
        return 1.0 + 2.0 * u
    if len(shape) == 4:
        fan_in = math.prod(shape[1:])
        return (u - 0.5) * 2.0 * math.sqrt(6.0 / fan_in)  # He-uniform
    return (u - 0.5) * 0.2  # biases, BN shifts and running means


def filled_names(model):
    return sorted(k for k in model.state_dict() if not k.endswith("num_batches_tracked") and not k.endswith("dfl.conv.weight"))


def fill(model):
    state = model.state_dict()
    with torch.no_grad():
        for t_index, name in enumerate(filled_names(model)):
            t = state[name]
            vals = [fill_value(name, list(t.shape), t_index, i) for i in range(t.numel())]
            t.copy_(torch.tensor(vals, dtype=torch.float64).view(t.shape).to(t.dtype))


def fixed_input(h=64, w=96):
    k = torch.empty(1, 3, h, w, dtype=torch.uint8)
    for c in range(3):
        for y in range(h):
            for x in range(w):
                k[0, c, y, x] = (67 * c + 29 * y + 13 * x + (x * y) % 11) % 256
    return k.float() / 255.0


class Rows(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def parse_rows(lines):
    rows = []
    for line in lines:
        m = re.match(r"^\s*(\d+)\s+(-?\d+|\[[-\d, ]+\])\s+(\d+)\s+(\d+)\s+(\S+)\s+(.*)$", line)
        if m:
            rows.append({"i": int(m[1]), "from": m[2], "n": int(m[3]), "params": int(m[4]), "module": m[5], "args": m[6].strip()})
    return rows


def summaries():
    out = {}
    logger = logging.getLogger("ultralytics")
    for fam in ("yolov8", "yolo11", "yolov5u"):
        for s in "nsmlx":
            name = f"yolov5{s}u.yaml" if fam == "yolov5u" else f"{fam}{s}.yaml"
            handler = Rows()
            logger.addHandler(handler)
            model = DetectionModel(name, verbose=True)
            logger.removeHandler(handler)
            leaves = [m for _, m in model.named_modules() if len(m._modules) == 0]
            out[name] = {
                "layers": len(leaves),
                "parameters": sum(p.numel() for p in model.parameters()),
                "gradients": sum(p.numel() for p in model.parameters() if p.requires_grad),
                "gflops": get_flops(model, 640),
                "stride": [float(x) for x in model.stride],
                "legacy": bool(model.model[-1].legacy),
                "rows": parse_rows(handler.lines),
            }
    return out


def relative_error(a, exact):
    """max |a - exact| / max(1, max |exact|): how far float32 is from the float64 result."""
    return float((a.double() - exact).abs().max() / max(1.0, float(exact.abs().max())))


def fp32_errors(model, x):
    """The float32 model's own rounding error against the same model in float64, per compared output:
    the scale a re-implementation's float32 differences are judged by."""
    out = {}
    for mode in ("eval", "train"):
        a, b = copy.deepcopy(model), copy.deepcopy(model).double()
        getattr(a, mode)()
        getattr(b, mode)()
        with torch.no_grad():
            ya, yb = a(x), b(x.double())
        pa, pb = (ya[1], yb[1]) if mode == "eval" else (ya, yb)
        out[f"{mode}_boxes"] = relative_error(pa["boxes"], pb["boxes"])
        out[f"{mode}_scores"] = relative_error(pa["scores"], pb["scores"])
        if mode == "eval":
            out["eval_decoded_xywh"] = relative_error(ya[0][:, :4], yb[0][:, :4])
            out["eval_decoded_scores"] = relative_error(ya[0][:, 4:], yb[0][:, 4:])
    return out


def forward_vectors(name):
    torch.manual_seed(0)
    model = DetectionModel(name, nc=3, verbose=False)
    fill(model)
    x = fixed_input()
    errors = fp32_errors(model, x)
    sums = []
    hooks = [m.register_forward_hook(lambda _m, _i, o: sums.append([float(o.double().sum()), float(o.double().abs().sum())]))
             for m in model.model[:-1]]
    model.eval()
    with torch.no_grad():
        y, preds = model(x)
    for h in hooks:
        h.remove()
    out = {"model": name, "nc": 3, "input_note": "k[c,y,x] = (67c + 29y + 13x + (x*y) % 11) % 256 as uint8, / 255; 1x3x64x96",
           "fill_note": "see fill_value() in make_vectors.py; dfl.conv.weight keeps arange(16)",
           "filled_tensors": len(filled_names(model)),
           "fp32_error_note": "relative max |float32 - float64| of Ultralytics' own model on this input, per output",
           "fp32_error": errors,
           "eval": {"decoded": tensor(y), "boxes": tensor(preds["boxes"]), "scores": tensor(preds["scores"]),
                    "layer_sums": sums}}
    model.train()
    with torch.no_grad():
        preds = model(x)
    bn = model.model[0].bn
    out["train"] = {"boxes": tensor(preds["boxes"]), "scores": tensor(preds["scores"]),
                    "bn0_running_mean": tensor(bn.running_mean), "bn0_running_var": tensor(bn.running_var)}
    return out


def loss_vectors(case):
    """v8DetectionLoss (TaskAlignedAssigner topk 10, alpha 0.5, beta 6; CIoU + DFL; BCE) on seeded raw
    head maps of a 64x96 input (levels 8x12, 4x6, 2x3: 126 cells) with nc=3, and its gradients."""
    from types import SimpleNamespace

    from ultralytics.utils.loss import v8DetectionLoss

    torch.manual_seed(case["seed"])
    model = DetectionModel("yolov8n.yaml", nc=3, verbose=False)
    model.args = SimpleNamespace(box=7.5, cls=0.5, dfl=1.5)
    loss_fn = v8DetectionLoss(model)
    bs, n = case["batch"], 126
    boxes = (torch.randn(bs, 64, n) * 2.0).requires_grad_(True)
    scores = (torch.randn(bs, 3, n) * 2.0 - 2.0).requires_grad_(True)
    feats = [torch.zeros(bs, 1, h, w) for h, w in ((8, 12), (4, 6), (2, 3))]
    t = torch.tensor(case["targets"], dtype=torch.float32).view(-1, 6)
    batch = {"batch_idx": t[:, 0], "cls": t[:, 1:2], "bboxes": t[:, 2:]}
    (fg_mask, target_gt_idx, target_bboxes, _, _), loss, _ = loss_fn.get_assigned_targets_and_loss(
        {"boxes": boxes, "scores": scores, "feats": feats}, batch)
    total = (loss * bs).sum()
    total.backward()
    return {"case": case["name"], "note": case["note"], "nc": 3, "reg_max": 16, "strides": [8, 16, 32],
            "image_hw": [64, 96], "hyp": {"box": 7.5, "cls": 0.5, "dfl": 1.5},
            "targets_note": "rows (image, class, x, y, w, h), xywh normalized to the 96 x 64 image",
            "targets": tensor(t), "boxes": tensor(boxes), "scores": tensor(scores),
            "loss_note": "[box, cls, dfl] after the gains, per image (Ultralytics returns them x batch; the sum is backpropagated)",
            "loss": tensor(loss.detach()), "grad_boxes": tensor(boxes.grad), "grad_scores": tensor(scores.grad),
            "fg_mask": tensor(fg_mask.to(torch.uint8)), "target_gt_idx": tensor(target_gt_idx),
            "target_bboxes_note": "xyxy in input pixels of the box each cell is assigned (0 where none)",
            "target_bboxes": tensor(target_bboxes)}


def nms_vectors(name, params, seed):
    """utils/nms.py non_max_suppression on a seeded anchor-free output (no objectness): 2 images,
    300 rows of clustered boxes, nc=4; Kestrel's layout [bs, N, 4 + nc] is stored (Ultralytics takes
    it transposed). Inputs are redrawn until no candidate pair of a class has an IoU within 1e-4 of
    iou_thres, so float rounding cannot decide a suppression."""
    import torchvision

    from ultralytics.utils.metrics import box_iou
    from ultralytics.utils.nms import non_max_suppression
    from ultralytics.utils.ops import xywh2xyxy

    g = torch.Generator().manual_seed(seed)
    while True:
        centres = torch.rand(2, 12, 2, generator=g) * 500 + 50
        pick = torch.randint(0, 12, (2, 300), generator=g)
        xy = centres.gather(1, pick[..., None].expand(-1, -1, 2)) + torch.randn(2, 300, 2, generator=g) * 8
        wh = torch.rand(2, 300, 2, generator=g) * 80 + 20
        cls = torch.rand(2, 300, 4, generator=g) ** 3
        pred = torch.cat((xy, wh, cls), 2)
        boxes = xywh2xyxy(pred[..., :4])
        near = max(float(((box_iou(b, b) - params["iou_thres"]).abs() < 1e-4).float().sum()) for b in boxes)
        if near == 0:
            break
    out = non_max_suppression(pred.transpose(1, 2).contiguous(), conf_thres=params["conf_thres"],
                              iou_thres=params["iou_thres"], multi_label=params["multi_label"],
                              max_det=params["max_det"], agnostic=params["agnostic"])
    assert "torchvision" in __import__("sys").modules and torchvision
    return {"description": name, "params": {**params, "classes": None, "max_wh": 7680, "max_nms": 30000},
            "input_seed": seed, "inputs": {"prediction": tensor(pred), "prediction_note": "[bs, N, 4 + nc]: xywh pixels, class scores"},
            "outputs": {"detections": [tensor(o) for o in out], "detections_note": "per image [k, 6]: x1, y1, x2, y2, conf, class",
                        "kept": [int(o.shape[0]) for o in out]}}


def metrics_vectors(yolov5_file):
    """ap_per_class on the inputs of a YOLOv5 vector file (../metrics_ap_*.json), so the two
    families' numbers differ by Ultralytics' own rules alone."""
    import numpy as np

    from ultralytics.utils.metrics import ap_per_class

    with open(yolov5_file) as f:
        inputs = json.load(f)["inputs"]
    arr = lambda t: np.array(t["data"]).reshape(t["shape"])  # noqa: E731
    tp, fp, p, r, f1, ap, classes = ap_per_class(arr(inputs["tp"]).astype(bool), arr(inputs["conf"]),
                                                 arr(inputs["pred_cls"]), arr(inputs["target_cls"]))[:7]
    t64 = lambda v: tensor(torch.tensor(np.asarray(v, dtype=np.float64)))  # noqa: E731
    return {"inputs_from": yolov5_file.split("/")[-1], "inputs": inputs,
            "outputs": {"ap_class": t64(classes), "p": t64(p), "r": t64(r), "f1": t64(f1), "ap": t64(ap),
                        "tp_at_max_f1": t64(tp), "fp_at_max_f1": t64(fp)}}


NMS_CASES = {
    "nms_val": ("val settings (conf 0.001, IoU 0.7, multi-label, 300 detections)",
                {"conf_thres": 0.001, "iou_thres": 0.7, "multi_label": True, "max_det": 300, "agnostic": False}, 11),
    "nms_predict": ("predict settings (conf 0.25, IoU 0.7, best class only)",
                    {"conf_thres": 0.25, "iou_thres": 0.7, "multi_label": False, "max_det": 300, "agnostic": False}, 12),
}


LOSS_CASES = [
    {"name": "two_images", "seed": 1, "batch": 2,
     "note": "image 0: a large box, a 10 x 8 px box (under the 16 px stride, so its candidate region grows) and a "
             "box overlapping the first; image 1: one box at the border",
     "targets": [[0, 0, 0.40, 0.45, 0.50, 0.60], [0, 2, 0.80, 0.20, 0.104, 0.125], [0, 1, 0.45, 0.50, 0.30, 0.40],
                 [1, 1, 0.06, 0.90, 0.12, 0.20]]},
    {"name": "empty_image", "seed": 2, "batch": 3,
     "note": "three images, the middle one without boxes, two boxes of one class in the last",
     "targets": [[0, 2, 0.5, 0.5, 0.9, 0.9], [2, 0, 0.25, 0.3, 0.2, 0.3], [2, 0, 0.7, 0.6, 0.35, 0.5]]},
]


TINY_YAML = {
    "nc": 2,
    "scales": {"t": [0.33, 0.25, 1024]},
    "scale": "t",
    "backbone": [[-1, 1, "Conv", [32, 3, 2]], [-1, 1, "Conv", [64, 3, 2]], [-1, 1, "C2f", [64, True]],
                 [-1, 1, "Conv", [128, 3, 2]], [-1, 2, "C3k2", [128, False, 0.25]], [-1, 1, "SPPF", [128, 5]],
                 [-1, 1, "C2PSA", [128]]],
    "head": [[-1, 1, "nn.Upsample", [None, 2, "nearest"]], [[-1, 2], 1, "Concat", [1]], [-1, 1, "C2f", [64]],
             [[9, 6], 1, "Detect", ["nc"]]],
}


def tiny_checkpoint(out_dir):
    import copy
    import datetime
    import io

    from ultralytics.utils.torch_utils import strip_optimizer

    model = DetectionModel(copy.deepcopy(TINY_YAML), nc=2, verbose=False)
    fill(model)
    model.names = {0: "crack", 1: "hole"}
    model.args = {"imgsz": 96}
    ema = copy.deepcopy(model).half().eval()
    ckpt = {"epoch": 4, "best_fitness": 0.25, "model": None, "ema": ema, "updates": 40, "optimizer": None,
            "train_args": {"model": "tiny.yaml", "data": "tiny.yaml", "epochs": 5, "imgsz": 96, "batch": 4, "nbs": 64},
            "train_metrics": {"metrics/mAP50-95(B)": 0.25, "fitness": 0.25}, "date": datetime.datetime(2026, 12, 7).isoformat(),
            "version": ultralytics.__version__}
    path = f"{out_dir}/tiny_best.pt"
    buf = io.BytesIO()
    torch.save(ckpt, buf)
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    strip_optimizer(path)  # as the trainer leaves best.pt: model = the EMA, fp16, no optimizer
    loaded = torch.load(path, map_location="cpu", weights_only=False)["model"].float().eval()
    with torch.no_grad():
        y = loaded(fixed_input())[0]
    return {"checkpoint": "tiny_best.pt", "yaml": TINY_YAML, "names": ["crack", "hole"], "epoch": 4,
            "fp32_error": fp32_errors(loaded, fixed_input()), "eval": {"decoded": tensor(y)}}


def seeded(shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g)


def musgd_vectors():
    from ultralytics.optim.muon import MuSGD, zeropower_via_newtonschulz5

    ns = [{"input": tensor(x), "output": tensor(zeropower_via_newtonschulz5(x).float())}
          for x in (seeded([3, 10, 6], 1), seeded([12, 5], 2), seeded([4, 9], 3))]
    # The Muon group's conv filters share 36 columns: rows 40, 16, 8 share one padded call, rows 2
    # (more than 16x fewer than 40) get their own.
    groups = [("muon", [[8, 4, 3, 3], [40, 4, 3, 3], [16, 4, 3, 3], [2, 4, 3, 3], [6, 16, 1, 1], [5, 12], [12, 5], [7, 7]],
               {"lr": 0.01, "use_muon": True, "weight_decay": 0.0005}),
              ("muon_boosted", [[6, 8, 1, 1], [3, 8, 3, 3]], {"lr": 0.03, "use_muon": True, "weight_decay": 0.0005}),
              ("bias", [[16], [8]], {"lr": 0.01, "use_muon": False, "weight_decay": 0.0}),
              ("norm", [[16], [6]], {"lr": 0.01, "use_muon": False, "weight_decay": 0.0})]
    params, out_groups, seed = [], [], 100
    for name, shapes, opts in groups:
        ps = [torch.nn.Parameter(seeded(s, seed + i) * 0.1) for i, s in enumerate(shapes)]
        seed += 10
        params.append({"params": ps, "momentum": 0.9, "nesterov": True, **opts})
        out_groups.append({"name": name, **opts, "initial": [tensor(p) for p in ps]})
    frozen = torch.nn.Parameter(seeded([1, 16, 1, 1], 99), requires_grad=False)  # DFL's conv: no gradient, untouched
    params[0]["params"].append(frozen)
    out_groups[0]["frozen"] = tensor(frozen)
    opt = MuSGD(params, muon=0.2, sgd=1.0)
    steps = []
    for step, (lr_factor, momentum) in enumerate([(1.0, 0.8), (0.5, 0.85), (0.25, 0.937)]):
        grads = []
        for gi, group in enumerate(opt.param_groups):
            group["lr"] = out_groups[gi]["lr"] * lr_factor
            group["momentum"] = momentum
            gs = []
            for pi, p in enumerate(group["params"]):
                if p.requires_grad:
                    p.grad = seeded(p.shape, 1000 * (step + 1) + 50 * gi + pi)
                    gs.append(tensor(p.grad))
            grads.append(gs)
        opt.step()
        steps.append({"lr_factor": lr_factor, "momentum": momentum, "grads": grads,
                      "after": [[tensor(p) for p in g["params"] if p.requires_grad] for g in opt.param_groups]})
    return {"muon": 0.2, "sgd": 1.0, "newton_schulz": ns, "groups": out_groups, "steps": steps}


def musgd_groups(name):
    from types import SimpleNamespace

    from ultralytics.engine.trainer import BaseTrainer

    model = DetectionModel(name, nc=3, verbose=False)
    names = {id(p): n for n, p in model.named_parameters()}
    opt = BaseTrainer.build_optimizer(SimpleNamespace(), model, name="MuSGD", lr=0.01, momentum=0.9, decay=0.0005)
    return [{"params": [names[id(p)] for p in g["params"]], "lr": g["lr"], "weight_decay": g["weight_decay"],
             "use_muon": g["use_muon"], "param_group": g["param_group"], "momentum": g["momentum"],
             "nesterov": g["nesterov"]} for g in opt.param_groups]


HSV_CASES = [("identity", [0.0, 0.0, 0.0], [0.015, 0.7, 0.4]), ("typical", [0.3, -0.5, 0.2], [0.015, 0.7, 0.4]),
             ("hue_down", [-1.0, 0.25, -0.4], [0.015, 0.7, 0.4]), ("extreme", [1.0, -1.0, 1.0], [0.015, 0.7, 0.4]),
             ("large_hue_down", [-0.6, 0.5, 0.1], [0.5, 0.7, 0.4]), ("large_hue_up", [0.9, 0.0, 0.0], [0.5, 0.7, 0.4])]


def hsv_vectors(yolov5_file):
    import cv2
    from ultralytics.data.augment import RandomHSV

    with open(yolov5_file) as f:
        inputs = json.load(f)["inputs"]
    images = {k: np.array(v["data"], dtype=np.uint8).reshape(v["shape"]) for k, v in inputs.items()}
    cases, uniform = [], np.random.uniform
    for name, u, gains in HSV_CASES:
        np.random.uniform = lambda low, high, size, u=u: np.array(u, dtype=np.float64)
        try:
            out = {k: RandomHSV(*gains)({"img": img.copy()})["img"] for k, img in images.items()}
        finally:
            np.random.uniform = uniform
        cases.append({"name": name, "u": u, "hgain_sgain_vgain": gains,
                      "images": {k: {"shape": list(v.shape), "dtype": "uint8", "data": v.flatten().tolist()}
                                 for k, v in out.items()}})
    return {"opencv": cv2.__version__, "inputs_from": "../augment_hsv.json", "cases": cases}


PERSPECTIVE_CASES = [  # name, input (h, w), output size (w, h), hyp, the eight draws
    ("letterboxed", (48, 64), (64, 48), dict(translate=0.1, scale=0.5), [0.0, 0.0, 0.0, 1.37, 0.0, 0.0, 0.43, 0.58]),
    ("placed", (40, 64), (64, 64), dict(translate=0.1, scale=0.5), [0.0, 0.0, 0.0, 0.88, 0.0, 0.0, 0.47, 0.53]),
    ("mosaic", (96, 96), (48, 48), dict(translate=0.1, scale=0.5), [0.0, 0.0, 0.0, 0.71, 0.0, 0.0, 0.56, 0.47]),
    ("mosaic_zoom_out", (96, 96), (48, 48), dict(translate=0.1, scale=0.9), [0.0, 0.0, 0.0, 0.23, 0.0, 0.0, 0.41, 0.6]),
    ("rotated_sheared", (96, 96), (48, 48), dict(degrees=10.0, translate=0.1, scale=0.5, shear=5.0),
     [0.0, 0.0, -7.3, 1.12, 3.1, -1.7, 0.52, 0.44]),
    ("perspective", (48, 64), (64, 48), dict(degrees=5.0, translate=0.1, scale=0.5, perspective=0.0005),
     [0.0003, -0.0002, 4.1, 0.93, 0.0, 0.0, 0.49, 0.55]),
]


def pattern(h, w):
    y, x, c = np.meshgrid(np.arange(h), np.arange(w), np.arange(3), indexing="ij")
    return ((x * 37 + y * 91 + c * 53 + (x * y) % 17) % 256).astype(np.uint8)


def perspective_vectors():
    import hashlib
    import random

    from ultralytics.data.augment import RandomPerspective
    from ultralytics.utils.instance import Instances

    cases, uniform = [], random.uniform
    for k, (name, (h, w), size, hyp, draws) in enumerate(PERSPECTIVE_CASES):
        rs = np.random.RandomState(k)
        img = pattern(h, w)
        xy = rs.uniform(0, 1, (12, 2)) * [w, h]
        boxes = np.concatenate([xy, np.minimum(xy + rs.uniform(1, w / 2, (12, 2)), [w, h])], 1).astype(np.float32)
        cls = np.arange(12, dtype=np.float32).reshape(12, 1)  # the class is the row: the kept indices
        values = iter(draws + draws)  # the transform's eight, then the same again for its matrix alone
        random.uniform = lambda a, b: next(values)
        try:
            out = RandomPerspective(size=size, **hyp)(
                {"img": img.copy(), "cls": cls, "instances": Instances(boxes.copy(), bbox_format="xyxy", normalized=False)})
            M, _ = RandomPerspective(size=size, **hyp)._compute_affine_matrix(img, size)
        finally:
            random.uniform = uniform
        cases.append({"name": name, "hyp": hyp, "size_wh": list(size), "draws": draws,
                      "image_hw": [h, w],
                      "boxes": tensor(torch.from_numpy(boxes)),
                      "out_shape": list(out["img"].shape), "out_sha256": hashlib.sha256(out["img"].tobytes()).hexdigest(),
                      "M": [float(v) for v in M.flatten()], "M_dtype": str(M.dtype),
                      "kept": out["cls"].flatten().astype(int).tolist(),
                      "boxes_out": tensor(torch.from_numpy(out["instances"].bboxes.astype(np.float32)))})
    return {"cases": cases}


def labels_vectors():
    from ultralytics.data.augment import Format, RandomFlip
    from ultralytics.utils.instance import Instances

    rs = np.random.RandomState(7)
    h, w = 48, 64
    xy = rs.uniform(0, 1, (10, 2)) * [w, h]
    boxes = np.concatenate([xy, np.minimum(xy + rs.uniform(1, 30, (10, 2)), [w, h])], 1).astype(np.float32)
    boxes[0] = [0, 0, w, h]  # the whole image
    boxes[1, 2] = w  # on the right edge
    cases = []
    for flip_ud in (False, True):
        for flip_lr in (False, True):
            labels = {"img": np.zeros((h, w, 3), np.uint8), "cls": np.zeros((10, 1), np.float32),
                      "instances": Instances(boxes.copy(), bbox_format="xyxy", normalized=False)}
            labels = RandomFlip(p=float(flip_ud), direction="vertical")(labels)
            labels = RandomFlip(p=float(flip_lr), direction="horizontal")(labels)
            labels = Format(bbox_format="xywh", normalize=True, return_mask=False, return_keypoint=False, batch_idx=True)(labels)
            cases.append({"flip_ud": flip_ud, "flip_lr": flip_lr, "labels": tensor(labels["bboxes"].float())})
    return {"image_hw": [h, w], "boxes": tensor(torch.from_numpy(boxes)), "cases": cases}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    a = ap.parse_args()
    torch.set_num_threads(1)
    meta = {"generator": "make_vectors.py", "ultralytics": ultralytics.__version__, "torch": torch.__version__,
            "python": platform.python_version(), "threads": 1}
    with open(f"{a.out}/models.json", "w") as f:
        json.dump({"meta": meta, "function": "ultralytics.nn.tasks.DetectionModel + utils.torch_utils.model_info",
                   "models": summaries()}, f, indent=1)
    for size in ("small", "large"):
        with open(f"{a.out}/metrics_ap_{size}.json", "w") as f:
            json.dump({"meta": meta, "function": "ultralytics.utils.metrics.ap_per_class",
                       **metrics_vectors(f"{a.out}/../metrics_ap_{size}.json")}, f)
    for file, (name, params, seed) in NMS_CASES.items():
        with open(f"{a.out}/{file}.json", "w") as f:
            json.dump({"meta": meta, "function": "ultralytics.utils.nms.non_max_suppression (torchvision.ops.nms)",
                       **nms_vectors(name, params, seed)}, f)
    for case in LOSS_CASES:
        with open(f"{a.out}/loss_{case['name']}.json", "w") as f:
            json.dump({"meta": meta, "function": "ultralytics.utils.loss.v8DetectionLoss.get_assigned_targets_and_loss",
                       **loss_vectors(case)}, f)
    with open(f"{a.out}/tiny_best.json", "w") as f:
        json.dump({"meta": meta, "function": "trainer checkpoint + utils.torch_utils.strip_optimizer, DetectionModel.forward",
                   **tiny_checkpoint(a.out)}, f)
    with open(f"{a.out}/musgd.json", "w") as f:
        json.dump({"meta": meta, "function": "ultralytics.optim.MuSGD, BaseTrainer.build_optimizer(name='MuSGD')",
                   **musgd_vectors(), **{f"groups_{m}": musgd_groups(f"{m}.yaml") for m in ("yolov8n", "yolo11n")}}, f)
    with open(f"{a.out}/augment_perspective.json", "w") as f:
        json.dump({"meta": meta, "function": "ultralytics.data.augment.RandomPerspective", **perspective_vectors()}, f)
    with open(f"{a.out}/augment_labels.json", "w") as f:
        json.dump({"meta": meta, "function": "ultralytics.data.augment.RandomFlip, Format", **labels_vectors()}, f)
    with open(f"{a.out}/augment_hsv.json", "w") as f:
        json.dump({"meta": meta, "function": "ultralytics.data.augment.RandomHSV",
                   **hsv_vectors(f"{a.out}/../augment_hsv.json")}, f)
    for name in ("yolov8n.yaml", "yolo11n.yaml", "yolov5nu.yaml"):
        with open(f"{a.out}/forward_{name.replace('.yaml', '')}.json", "w") as f:
            json.dump({"meta": meta, "function": "ultralytics.nn.tasks.DetectionModel.forward", **forward_vectors(name)}, f)


if __name__ == "__main__":
    main()
