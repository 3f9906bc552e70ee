// The OpenMP peer of `numasteal bench forkjoin --peers` (GCC's libgomp):
// the workloads of peer.h with `omp task` forks and `omp taskwait` joins
// inside a parallel region of the given number of threads, and
// `parallel for reduction` for the sum.
#include <omp.h>

#include "peer.h"

int main(int argc, char** argv) {
  peer::Args a = peer::parse_args(argc, argv);
  omp_set_dynamic(0);
  // The version of the OpenMP specification GCC implements.
  const char* spec = _OPENMP >= 202011 ? "5.1" : _OPENMP >= 201811 ? "5.0" : _OPENMP >= 201511 ? "4.5" : "4.0";
  std::printf("peer openmp %s %d\n", spec, a.threads);
  auto parallel = [&](auto f) {
    uint64_t r = 0;
#pragma omp parallel num_threads(a.threads)
#pragma omp single
    r = f();
    return r;
  };
  auto join = [](auto&& f, auto&& g) {
    auto* fp = &f;
#pragma omp task firstprivate(fp)
    (*fp)();
    g();
#pragma omp taskwait
  };
  auto omp_sum = [&](const std::vector<int64_t>& v) {
    int64_t s = 0;
    long n = long(v.size());
    const int64_t* p = v.data();
#pragma omp parallel for reduction(+ : s) num_threads(a.threads) schedule(static)
    for (long i = 0; i < n; i++) s += p[i];
    return s;
  };
  auto spawn_join = [] {
#pragma omp task
    peer::nop();
#pragma omp taskwait
  };
  peer::run_all(a, parallel, join, omp_sum, spawn_join);
}
