// The layout of a Kestrel pack (.kpack): one LMDB environment in a single file (MDB_NOSUBDIR) holding
// a dataset's image and label files, so a loader reads one memory-mapped file instead of many small ones.
//
//   database "files"      relative path (as under the dataset root) -> the file's bytes
//   database "checksums"  relative path -> content_hash64 of the bytes (8 bytes, little-endian)
//   database "meta"       "format"        -> kPackFormat
//                         "dataset"       -> JSON: names, nc, splits, counts, max_side, the source data.yaml
//                         "scan"          -> JSON: the scan report of the packed data, paths relative
//                         "split/<name>"  -> the split's image paths, one per line, sorted
//
// Inside Kestrel a file of a pack is named "<pack file>::<relative path>"; a data.yaml names a split
// as "<pack file>#<split>" (for instance `train: coco128.kpack#train`).
#pragma once

namespace kestrel::pack_format {

inline constexpr char kFormat[] = "kestrel-pack-1";
inline constexpr char kExtension[] = ".kpack";
inline constexpr char kPathSeparator[] = "::";
inline constexpr char kSplitSeparator = '#';

inline constexpr char kFilesDb[] = "files";
inline constexpr char kChecksumsDb[] = "checksums";
inline constexpr char kMetaDb[] = "meta";

inline constexpr char kFormatKey[] = "format";
inline constexpr char kDatasetKey[] = "dataset";
inline constexpr char kScanKey[] = "scan";
inline constexpr char kSplitKeyPrefix[] = "split/";

}  // namespace kestrel::pack_format
