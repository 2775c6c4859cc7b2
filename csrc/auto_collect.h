// auto_collect.h -- automatic collection, driven by gc.callbacks.
//
// Policy. At the "start" of every CPython GC pass:
//
//   - generation 0 or 1: a young pass, seeded with the holders attached since
//     the previous pass, with a small node budget (kYoungNodesPerHolder per
//     seed plus kYoungBaseNodes): caches that die young are dropped at the
//     rhythm of the GC itself, and the cost follows the attachment rate, not
//     the number of live holders. Young passes back off while they find
//     nothing (a program whose caches stay live): after each empty one the
//     next waits for twice as many GC passes, up to kYoungMaxInterval, and is
//     seeded with the newest kYoungMaxSeeds holders only (the others are left
//     to full passes). One that detaches something resets the pace.
//
//   - generation 2: a full pass over every holder when either
//       (a) holders numbering at least max(kFullPassMinAttached, 1/kLiveDivisor
//           of the holders attached after the last full pass) have been
//           attached since it. This is the bound: a cache attached since the
//           last full pass is either still live or found by the next one, so
//           after any generation-2 collection the dead caches among those
//           attached since number fewer than that threshold; or
//       (b) at least kFullPassPause times the predicted duration of a full
//           pass has gone by since the last one ended. This finds caches that
//           were live at the last full pass and died since, at a cost of at
//           most about 1/kFullPassPause of the program's time. The prediction
//           is the last full pass's time per holder it examined (measured over
//           the holders it started with, not the survivors) times the holders
//           attached now.
//     Otherwise a young pass. Rule (a) costs what CPython's own rule for its
//     oldest generation costs: a full pass per fixed fraction of growth, so
//     every holder is examined a bounded number of times as the heap grows.
//
// Never during interpreter teardown (registry closed or finalizing), never
// nested inside a running pass. Figures: docs/collector.md (make bench).
#pragma once

#include "compat.h"

namespace coextra::detail {

constexpr Py_ssize_t kYoungNodesPerHolder = 64;
constexpr Py_ssize_t kYoungBaseNodes = 4096;
constexpr int kYoungMaxInterval = 64;
constexpr Py_ssize_t kYoungMaxSeeds = 1024;
constexpr Py_ssize_t kFullPassMinAttached = 1000;
constexpr Py_ssize_t kLiveDivisor = 10;
constexpr double kFullPassPause = 40.0;

// Adds (enabled) or removes (disabled) coextra's callback in gc.callbacks.
// 0, or -1 with an exception.
int auto_collect_set(bool enabled);

// 1 when coextra's callback is in gc.callbacks, 0 when not, -1 with an exception.
int auto_collect_get();

}  // namespace coextra::detail
