// The oneTBB peer of `numasteal bench forkjoin --peers`: the workloads of
// peer.h with tbb::task_group forks, parallel_reduce for the sum, on an
// arena of the given number of threads.
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_reduce.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#include <oneapi/tbb/version.h>

#include <functional>

#include "peer.h"

int main(int argc, char** argv) {
  peer::Args a = peer::parse_args(argc, argv);
  tbb::global_control gc(tbb::global_control::max_allowed_parallelism, a.threads);
  tbb::task_arena arena(a.threads);
  std::printf("peer tbb %s %d\n", TBB_VERSION_STRING, a.threads);
  auto parallel = [&](auto f) { return arena.execute(f); };
  auto join = [](auto&& f, auto&& g) {
    tbb::task_group tg;
    tg.run([&] { f(); });
    g();
    tg.wait();
  };
  auto sum = [&](const std::vector<int64_t>& v) {
    return arena.execute([&] {
      return tbb::parallel_reduce(
        tbb::blocked_range<size_t>(0, v.size()), int64_t(0),
        [&](const tbb::blocked_range<size_t>& r, int64_t s) {
          for (size_t i = r.begin(); i != r.end(); i++) s += v[i];
          return s;
        },
        std::plus<int64_t>());
    });
  };
  auto spawn_join = [] {
    tbb::task_group tg;
    tg.run(peer::nop);
    tg.wait();
  };
  peer::run_all(a, parallel, join, sum, spawn_join);
}
