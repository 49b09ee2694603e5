#pragma once
// The CPU references' one parallel loop: fn(0..n-1) over a pool of threads
// (0: one per hardware thread), each taking the next index as it finishes.
#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace moejit::reference {

template <typename Fn>
void parallel_for(int n, int threads, Fn fn) {
  if (threads <= 0) threads = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < std::min(threads, n); ++t)
    pool.emplace_back([&] {
      for (int i; (i = next.fetch_add(1)) < n;) fn(i);
    });
  for (auto& th : pool) th.join();
}

}  // namespace moejit::reference
