#pragma once
// The device view of the MoE workspace (seed §5.3): one flat allocation laid
// out by runtime/moe_workspace.cpp, handed to the role kernels as named
// pointers. Graph replays need no reset pass: every region a forward reads
// is first rewritten by its own dispatch role, and the synchronization state
// is monotone (the header epoch and the l1_done counters only ever grow; the
// dispatch role derives this forward's targets from their current values).

#include "mx_types.cuh"

namespace moejit {

struct MoeHeader {
  int n_active;  // experts with at least one route
  int items1;    // GEMM1 items (64-row weight tile x token tile)
  int items2;    // GEMM2 items
  int epoch;     // forwards run on this workspace: monotone, +1 per dispatch
};

struct MoeWorkspace {
  MoeHeader* header;
  int* token_poison;   // [Bcap]: 1 if a route of the token had no slot
  int* route_slot;     // [Bcap*k]: route (t*k + j), sorted by expert
  int* active_expert;  // [E]: expert id of active index a
  int* active_rows;    // [E]: routes of active expert a
  int* active_base;    // [E]: first position of active expert a in route_slot
  int* item_begin1;    // [E+1]: first GEMM1 item of active expert a (prefix)
  int* item_begin2;    // [E+1]: first GEMM2 item of active expert a (prefix, after GEMM1's)
  int* l1_done;        // [E]: GEMM1 items finished per active slot, monotone (release/acquire)
  int* l1_target;      // [E]: the l1_done value at which this forward's slot a is complete
  u8* x_q;             // [Bcap][H]: E4M3 activations (written when the input is BF16)
  u32* x_scales;       // [Bcap][H/128]: packed UE8M0 scales (likewise)
  u16* x_bf16;         // [Bcap][H]: BF16 image of the MXFP8 activations
  u16* handoff;        // [Bcap*k][I]: BF16 image of the requantized MXFP8 act, per route position
  u16* arena;          // [Bcap*k][H]: BF16 output row of each route slot (t*k + j)
};

// The workspace as kernel formals (codegen's moe_workspace_params() declares
// the same list, in this order) and the struct built from them.
#define MOEJIT_WORKSPACE_FORMALS                                                                                      \
  moejit::MoeHeader *ws_header, int *ws_token_poison, int *ws_route_slot, int *ws_active_expert, int *ws_active_rows, \
      int *ws_active_base, int *ws_item_begin1, int *ws_item_begin2, int *ws_l1_done, int *ws_l1_target,              \
      moejit::u8 *ws_x_q, moejit::u32 *ws_x_scales, moejit::u16 *ws_x_bf16, moejit::u16 *ws_handoff,                  \
      moejit::u16 *ws_arena
#define MOEJIT_WORKSPACE_STRUCT                                                                                  \
  moejit::MoeWorkspace {                                                                                         \
    ws_header, ws_token_poison, ws_route_slot, ws_active_expert, ws_active_rows, ws_active_base, ws_item_begin1, \
        ws_item_begin2, ws_l1_done, ws_l1_target, ws_x_q, ws_x_scales, ws_x_bf16, ws_handoff, ws_arena           \
  }

}  // namespace moejit
