// auto_collect.h -- automatic collection, driven by gc.callbacks.
//
// Policy (measured in bench/bench_collector.py, explained in
// docs/collector.md). At the "start" of every CPython GC pass:
//   - generation 0 or 1: a young pass, seeded with the holders attached since
//     the previous pass, with a small node budget (kYoungNodesPerHolder per
//     seed plus kYoungBaseNodes): caches that die young are dropped at the
//     rhythm of the GC itself, and the cost follows the attachment rate, not
//     the number of live holders. Young passes back off while they find
//     nothing (a program whose caches stay live): after each empty one the
//     next waits for twice as many GC passes, up to kYoungMaxInterval, and is
//     seeded with the newest kYoungMaxSeeds holders only (the others are left
//     to full passes). One that detaches something resets the pace;
//   - generation 2: a full pass when holders numbering at least a quarter of
//     those attached after the last full pass (or of those attached now, if
//     fewer) have been attached since -- CPython's own rule for its oldest
//     generation -- and at least kFullPassPause times the last full pass's
//     duration has gone by since it ended, otherwise a young pass. The next
//     pass's duration is predicted from the last one, scaled linearly by the
//     number of holders; larger heaps cost more per holder (they outgrow the
//     CPU caches), so with 32 a full pass at 53k holders predicted from one at
//     400 took 5% of a workload that attaches 100k (CPython 3.13). With 64,
//     full passes take at most about 1.5% of the time as predicted, about 3%
//     when the prediction is off by as much. Holders that die old are so
//     found after a bounded amount of attachment and time, and a program with
//     many live holders does not pay for re-checking them all the time.
// Never during interpreter teardown (registry closed or finalizing), never
// nested inside a running pass.
#pragma once

#include "compat.h"

namespace coextra {

constexpr Py_ssize_t kYoungNodesPerHolder = 64;
constexpr Py_ssize_t kYoungBaseNodes = 4096;
constexpr int kYoungMaxInterval = 64;
constexpr Py_ssize_t kYoungMaxSeeds = 1024;
constexpr double kFullPassPause = 64.0;

// Adds (enabled) or removes (disabled) coextra's callback in gc.callbacks.
// 0, or -1 with an exception.
int auto_collect_set(bool enabled);

// 1 when coextra's callback is in gc.callbacks, 0 when not, -1 with an exception.
int auto_collect_get();

}  // namespace coextra
