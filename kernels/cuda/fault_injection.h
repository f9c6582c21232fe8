// Faults on purpose, for tests of what the engine does when a device fails: an allocation that
// runs out of memory, a launch that fails in the middle of a network. They act in the emulator
// and natively alike (checked in DeviceBuffer::allocate and launch()), cost one relaxed atomic
// load when off, and are off unless a test turns them on.
#pragma once

#include <cstddef>
#include <cstdint>

namespace winfer {
namespace cuda {
namespace testing {

// Every cudaMalloc of more than `bytes` fails with out-of-memory (0: off).
void fail_allocations_above(size_t bytes);
// Launches `launches` more kernels, then fails every launch (-1: off).
void fail_launches_after(int64_t launches);
void clear_faults();

// For DeviceBuffer::allocate and launch().
bool allocation_fails(size_t bytes);
bool launch_fails();

}  // namespace testing
}  // namespace cuda
}  // namespace winfer
