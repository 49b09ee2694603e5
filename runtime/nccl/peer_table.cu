// The peer table of an expert-parallel layer on NCCL (issue: expert
// parallelism): entry r is the address, in this GPU's address space, of rank
// r's symmetric workspace, from NCCL's window mapping (ncclGetPeerPointer: by
// world rank; the LSA team's index is the same only where every rank shares
// one node). NCCL's device header does not compile under NVRTC, so this kernel
// is built with nvcc when moejit is built (one cubin per target, embedded in
// the library) and launched through the driver API like every JIT kernel.
#include <nccl_device.h>

extern "C" __global__ void moejit_fill_peer_table(ncclWindow_t window, int peers, unsigned long long* table) {
  for (int peer = threadIdx.x; peer < peers; peer += blockDim.x)
    table[peer] = reinterpret_cast<unsigned long long>(ncclGetPeerPointer(window, 0, peer));
}
