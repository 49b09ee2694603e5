#pragma once
// The in-memory layer: key -> value, thread-safe. A hit is one hash-map
// lookup under a shared lock; the key type is the caller's (runtime/ keys it
// by the KernelSpec itself, so a hit never hashes templates or files).

#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <unordered_map>

namespace moejit::cache {

template <class K, class V, class Hash = std::hash<K>, class Eq = std::equal_to<K>>
class MemoryStore {
 public:
  std::optional<V> find(const K& key) const {
    std::shared_lock lock(mu_);
    auto it = ready_.find(key);
    if (it == ready_.end()) return std::nullopt;
    return it->second;
  }

  // Runs make() once per key even when several threads ask at once; the others
  // wait for its result (*made = false for them). If make() throws, each waiter
  // gets the exception and the key stays absent, so a later call retries.
  template <class Make>
  V get_or_make(const K& key, Make&& make, bool* made = nullptr) {
    std::promise<V> promise;
    std::shared_future<V> pending;
    {
      std::unique_lock lock(mu_);
      if (auto it = ready_.find(key); it != ready_.end()) {
        if (made) *made = false;
        return it->second;
      }
      if (auto it = pending_.find(key); it != pending_.end())
        pending = it->second;
      else
        pending_.emplace(key, promise.get_future().share());
    }
    if (pending.valid()) {
      if (made) *made = false;
      return pending.get();
    }
    if (made) *made = true;
    try {
      V value = make();
      {
        std::unique_lock lock(mu_);
        ready_.emplace(key, value);
        pending_.erase(key);
      }
      promise.set_value(value);
      return value;
    } catch (...) {
      {
        std::unique_lock lock(mu_);
        pending_.erase(key);
      }
      promise.set_exception(std::current_exception());
      throw;
    }
  }

  size_t size() const {
    std::shared_lock lock(mu_);
    return ready_.size();
  }

  void clear() {
    std::unique_lock lock(mu_);
    ready_.clear();
  }

 private:
  mutable std::shared_mutex mu_;
  std::unordered_map<K, V, Hash, Eq> ready_;
  std::unordered_map<K, std::shared_future<V>, Hash, Eq> pending_;
};

}  // namespace moejit::cache
