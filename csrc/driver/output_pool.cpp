// The bounded pool of large output buffers (output_pool.h says why and what it promises).
#include "driver/output_pool.h"

#include <ATen/EmptyTensor.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/util/Exception.h>

#include <pthread.h>

#include <cstdlib>
#include <list>
#include <mutex>

namespace qplugin {
namespace driver {
namespace {

// Buffers are sized in 64 KB steps so that nearby sizes share one buffer.
constexpr size_t kStep = 64 * 1024;
// A free buffer serves a request when it is at most this much larger (1/8 of the request).
constexpr size_t kSlackDiv = 8;
// Free buffers kept at most, whatever their bytes (bounds the search below).
constexpr size_t kMaxIdleBuffers = 64;

int64_t limit_from_env() {
  const char* s = std::getenv("QPLUGIN_OUTPUT_POOL_MB");
  if (s == nullptr || *s == '\0') return int64_t{256} << 20;
  char* end = nullptr;
  const long long mb = std::strtoll(s, &end, 10);
  TORCH_CHECK(end != s && *end == '\0' && mb >= 0 && mb <= (int64_t{1} << 30),
              "qplugin: QPLUGIN_OUTPUT_POOL_MB: expected a number of megabytes >= 0, got '", s,
              "'");
  return static_cast<int64_t>(mb) << 20;
}

struct Block {
  void* ptr;
  size_t bytes;
};

class OutputPool final : public c10::Allocator {
 public:
  OutputPool() : limit_(limit_from_env()) {}

  // fork() while another thread holds the lock would leave the child's copy locked for good:
  // take it around fork (pthread_atfork, registered once by pool()).
  void lock_for_fork() { mu_.lock(); }
  void unlock_after_fork() { mu_.unlock(); }

  c10::DataPtr allocate(size_t n) override {
    if (limit_ == 0 || n < static_cast<size_t>(kMinPooledBytes)) {
      return c10::GetCPUAllocator()->allocate(n);
    }
    const size_t want = (n + kStep - 1) / kStep * kStep;
    Block* b = nullptr;
    {
      std::lock_guard<std::mutex> g(mu_);
      // Most recently returned first: its lines are the likeliest to be in cache.
      for (auto it = idle_.begin(); it != idle_.end(); ++it) {
        if ((*it)->bytes >= want && (*it)->bytes - want <= want / kSlackDiv) {
          b = *it;
          idle_.erase(it);
          idle_bytes_ -= static_cast<int64_t>(b->bytes);
          ++reused_;
          break;
        }
      }
      if (b == nullptr) ++fresh_;
    }
    if (b == nullptr) {
      b = new Block{c10::alloc_cpu(want), want};  // alloc_cpu throws on failure
    }
    return {b->ptr, b, &OutputPool::give_back, c10::Device(c10::DeviceType::CPU)};
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

  OutputPoolStats stats() {
    std::lock_guard<std::mutex> g(mu_);
    return {idle_bytes_, static_cast<int64_t>(idle_.size()), reused_, fresh_, limit_};
  }

  int64_t release() {
    std::list<Block*> gone;
    int64_t bytes = 0;
    {
      std::lock_guard<std::mutex> g(mu_);
      gone.swap(idle_);
      bytes = idle_bytes_;
      idle_bytes_ = 0;
    }
    for (Block* b : gone) free_block(b);
    return bytes;
  }

 private:
  static void free_block(Block* b) {
    c10::free_cpu(b->ptr);
    delete b;
  }

  static void give_back(void* ctx);

  void put(Block* b) {
    std::list<Block*> evicted;
    {
      std::lock_guard<std::mutex> g(mu_);
      if (static_cast<int64_t>(b->bytes) > limit_) {
        evicted.push_back(b);
      } else {
        idle_.push_front(b);
        idle_bytes_ += static_cast<int64_t>(b->bytes);
        // Over the limit: drop the least recently returned buffers.
        while (idle_bytes_ > limit_ || idle_.size() > kMaxIdleBuffers) {
          Block* old = idle_.back();
          idle_.pop_back();
          idle_bytes_ -= static_cast<int64_t>(old->bytes);
          evicted.push_back(old);
        }
      }
    }
    for (Block* e : evicted) free_block(e);
  }

  std::mutex mu_;
  std::list<Block*> idle_;  // front: most recently returned
  int64_t idle_bytes_ = 0;
  int64_t reused_ = 0, fresh_ = 0;
  const int64_t limit_;
};

// Never destroyed: tensors may outlive static destruction at exit and still return here.
OutputPool& pool() {
  static OutputPool* p = [] {
    OutputPool* q = new OutputPool();
    pthread_atfork([] { pool().lock_for_fork(); }, [] { pool().unlock_after_fork(); },
                   [] { pool().unlock_after_fork(); });
    return q;
  }();
  return *p;
}

void OutputPool::give_back(void* ctx) { pool().put(static_cast<Block*>(ctx)); }

}  // namespace

at::Tensor empty_pooled_float(c10::IntArrayRef sizes) {
  return at::detail::empty_generic(sizes, &pool(), c10::DispatchKeySet(c10::DispatchKey::CPU),
                                   at::kFloat, c10::nullopt);
}

OutputPoolStats output_pool_stats() { return pool().stats(); }

int64_t release_output_pool() { return pool().release(); }

}  // namespace driver
}  // namespace qplugin
