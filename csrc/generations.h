// generations.h -- Generations: the runs that automatic collection keeps the
// registry's holders and the maps' entries in (the steps of a generation
// pass over both kinds are generation_pass.h's). The policy (which pass
// examines what, when members age) is docs/design.md's "Automatic
// collection".
#pragma once

#include <cassert>
#include <cstddef>

namespace coextra::detail {

// A kind's members, a sequence [0, end) that the kind keeps (the registry's
// holders' slots, a map's table positions), in four contiguous runs:
//
//     [0, old_end)               old
//     [old_end, middle_end)      middle: found live by one generation pass
//     [middle_end, pass_end)     young, examined by the generation pass in
//                                progress (empty when none is)
//     [pass_end, end)            young, added since it began
//
// Generations holds the bounds and moves them; the kind adds members at the
// end and keeps `end`.
struct Generations {
    size_t old_end = 0;
    size_t middle_end = 0;
    size_t pass_end = 0;

    // A generation pass begins over a sequence `end` long: every young
    // member is examined by it (those of an earlier pass that never aged
    // stay examined).
    void begin_pass(size_t end) { pass_end = end; }

    // The pass has examined [old_end, pass_end): middle becomes old, the
    // young members it examined become middle, or old too when
    // `straight_to_old`; those added since it began stay young.
    void age(bool straight_to_old) {
        old_end = straight_to_old ? pass_end : middle_end;
        middle_end = pass_end;
    }

    // A pass over every member found each survivor live: all of [0, end)
    // is old, and a pass in progress has nothing left to examine.
    void all_old(size_t end) { old_end = middle_end = pass_end = end; }

    // Whether some member of [0, end) is middle or young.
    bool pending(size_t end) const { return old_end < end; }

    // How many members the pass in progress examines: middle and young,
    // [old_end, pass_end).
    size_t in_pass() const { return pass_end - old_end; }

    // How many members are young since the pass in progress began.
    size_t young_since(size_t end) const { return end - pass_end; }

    // The sequence is cut to [0, end): the runs past it lose their members.
    void truncate(size_t end) {
        old_end = old_end < end ? old_end : end;
        middle_end = middle_end < end ? middle_end : end;
        pass_end = pass_end < end ? pass_end : end;
    }

    // Member `slot` of a sequence `end` long leaves, the runs staying
    // contiguous: the hole moves to the end of its run, then to the end of
    // each later run, calling move(from, to) for each member that fills it
    // (from the last slot of a run to a lower slot of the same run, so a
    // member never changes runs), and the kind then drops its last member.
    // A hole already at the end of a run moves without a call.
    template <typename Move>
    void remove(size_t slot, size_t end, Move move) {
        size_t *ends[] = {&old_end, &middle_end, &pass_end, &end};
        for (size_t *run_end : ends) {
            if (slot < *run_end) {
                size_t last = --*run_end;
                if (last != slot) {
                    move(last, slot);
                }
                slot = last;
            }
        }
    }

    // Checks that the bounds are in order within [0, end), as the kinds do
    // after each step: only in builds with assertions (the asan and debug
    // presets).
    void validate([[maybe_unused]] size_t end) const {
        assert(old_end <= middle_end && middle_end <= pass_end && pass_end <= end &&
               "generation runs out of order");
    }
};

}  // namespace coextra::detail
