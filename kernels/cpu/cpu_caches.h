// The data-cache sizes that the CPU convolutions block for, read from the machine once.
//
// Blockings that keep a working set in L2 (im2win's window blocks, which layers run their
// weights tile by tile from L2 rather than panel by panel, Winograd's weight streaming) used to
// assume a 2 MiB L2 per core (Intel Xeon, where they were tuned). On a CPU with 512 KiB per
// core (AMD Zen 3) that sent 0.5-1.5 MB of weights through L3 once per tile.
#pragma once

#include <cstdint>

namespace winfer {
namespace cpu {

// Bytes of L2 cache one core may use: WINFER_L2_BYTES when set (a number of bytes, or with a
// K or M suffix: "512K", "2M"; values outside [64 KiB, 64 MiB] or unreadable are ignored),
// else the OS's (sysconf, then /sys/devices/system/cpu/cpu0/cache), else 1 MiB. Read once,
// unless a test overrides it (set_l2_bytes_for_testing).
int64_t l2_bytes();

// Packed weights up to this size stay in L2 next to a thread's activations while every tile
// reads them: 3/4 of l2_bytes(). (On the 2 MiB L2 it was tuned on, 1.5 MiB took im2win's 3x3/2
// 128->256, 1.2 MB, into its barrier-free schedule: +10% at 2 threads, same at 1.)
int64_t l2_weight_bytes();

// The size `text` names in bytes ("524288", "512K", "2M", "2MiB"), or -1 when it names none.
int64_t parse_cache_size(const char* text);

// Test and benchmark hook: blockings computed after this call assume `bytes` of L2 (0: back
// to the machine's). A plan's workspace sizes follow the value at planning time, so change it
// only between plans, never between planning and running a convolution.
void set_l2_bytes_for_testing(int64_t bytes);

}  // namespace cpu
}  // namespace winfer
