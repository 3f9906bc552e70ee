// peer.h: what the C++ peers of `numasteal bench forkjoin --peers` share:
// the arguments, the clocks, the serial baselines, the input, the checks and
// the output lines the Go driver parses (bench/forkjoin_peers_parse.go).
#ifndef NUMASTEAL_PEER_H
#define NUMASTEAL_PEER_H

#include <dirent.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace peer {

// Args are the positional arguments every peer takes, in this order:
// threads fib_n cutoff sum_n sort_n joins.
struct Args {
  int threads;
  int fib_n, cutoff;
  long sum_n, sort_n, joins;
};

inline Args parse_args(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s threads fib_n cutoff sum_n sort_n joins\n", argv[0]);
    std::exit(2);
  }
  Args a;
  a.threads = std::atoi(argv[1]);
  a.fib_n = std::atoi(argv[2]);
  a.cutoff = std::atoi(argv[3]);
  a.sum_n = std::atol(argv[4]);
  a.sort_n = std::atol(argv[5]);
  a.joins = std::atol(argv[6]);
  if (a.threads < 1 || a.fib_n < 2 || a.cutoff < 2 || a.sum_n < 1 || a.sort_n < 1 || a.joins < 1) {
    std::fprintf(stderr, "%s: every argument must be positive (fib_n, cutoff >= 2)\n", argv[0]);
    std::exit(2);
  }
  return a;
}

inline uint64_t clock_ns(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// run_delay_ns sums the time this process's threads waited on a run queue
// for a CPU (the second field of /proc/self/task/*/schedstat).
inline uint64_t run_delay_ns() {
  uint64_t sum = 0;
  DIR* d = opendir("/proc/self/task");
  if (!d) return 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::string p = std::string("/proc/self/task/") + e->d_name + "/schedstat";
    if (FILE* f = std::fopen(p.c_str(), "r")) {
      unsigned long long on, wait;
      if (std::fscanf(f, "%llu %llu", &on, &wait) == 2) sum += wait;
      std::fclose(f);
    }
  }
  closedir(d);
  return sum;
}

// measure runs f once and prints its line: workload variant wall_ns cpu_ns
// wait_ns check, where cpu_ns is the process's CPU time and check is
// post(f()), computed after the clocks stop.
template <class F, class Post>
void measure(const char* workload, const char* variant, F f, Post post) {
  uint64_t w0 = run_delay_ns();
  uint64_t c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
  uint64_t r = f();
  uint64_t t1 = clock_ns(CLOCK_MONOTONIC);
  uint64_t c1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  uint64_t w1 = run_delay_ns();
  std::printf("%s %s %llu %llu %llu %llu\n", workload, variant, (unsigned long long)(t1 - t0),
              (unsigned long long)(c1 - c0), (unsigned long long)(w1 - w0), (unsigned long long)post(r));
  std::fflush(stdout);
}

template <class F>
void measure(const char* workload, const char* variant, F f) {
  measure(workload, variant, f, [](uint64_t r) { return r; });
}

// nop is the body of the empty spawns: a call the compiler cannot drop,
// so that the task really is created.
__attribute__((noinline)) inline void nop() { asm volatile("" ::: "memory"); }

// fib is the serial recursion every fib contender is compared with.
__attribute__((noinline)) inline uint64_t fib(int n) { return n < 2 ? uint64_t(n) : fib(n - 1) + fib(n - 2); }

// splitmix64 fills the sort input, the same in every peer.
inline std::vector<int64_t> random_ints(long n) {
  std::vector<int64_t> v(n);
  uint64_t x = 1;
  for (auto& e : v) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    e = int64_t((z ^ (z >> 31)) >> 1);
  }
  return v;
}

// sorted_check is 1 when v is sorted and holds the elements of in.
inline uint64_t sorted_check(const std::vector<int64_t>& v, const std::vector<int64_t>& in) {
  uint64_t a = 0, b = 0;
  for (auto e : v) a += uint64_t(e);
  for (auto e : in) b += uint64_t(e);
  return std::is_sorted(v.begin(), v.end()) && a == b && v.size() == in.size();
}

// sum_input is 0, 1, ..., n-1; its sum is n(n-1)/2.
inline std::vector<int64_t> sum_input(long n) {
  std::vector<int64_t> v(n);
  for (long i = 0; i < n; i++) v[i] = i;
  return v;
}

inline int64_t sum_serial(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (auto e : v) s += e;
  return s;
}

// fib_fork is fib with a fork at every call with n >= cutoff (cutoff 2:
// every call), through join(f, g), which runs f and g, potentially in
// parallel, and returns when both are done. A leaf (n < 2) returns n as
// fib's do, without a call.
template <class Join>
uint64_t fib_fork(int n, int cutoff, const Join& join) {
  if (n < 2) return uint64_t(n);
  if (n < cutoff) return fib(n);
  uint64_t a, b;
  join([&] { a = fib_fork(n - 1, cutoff, join); }, [&] { b = fib_fork(n - 2, cutoff, join); });
  return a + b;
}

// kSortGrain is where the merge sort hands a run to std::sort and a merge
// to std::merge (msort.DefaultGrain in Go).
constexpr long kSortGrain = 1 << 16;

// merge_split splits the merge of sorted a and b (a the longer) at a's
// middle: the lengths of the first halves of a and b.
inline void merge_split(const int64_t* a, long na, const int64_t* b, long nb, long* ma, long* mb) {
  *ma = na / 2;
  *mb = std::lower_bound(b, b + nb, a[*ma]) - b;
}

// merge merges sorted a and b into out, in parallel above kSortGrain.
template <class Join>
void merge(const int64_t* a, long na, const int64_t* b, long nb, int64_t* out, const Join& join) {
  if (na < nb) {
    std::swap(a, b);
    std::swap(na, nb);
  }
  if (na + nb <= kSortGrain) {
    std::merge(a, a + na, b, b + nb, out);
    return;
  }
  long ma, mb;
  merge_split(a, na, b, nb, &ma, &mb);
  join([&] { merge(a, ma, b, mb, out, join); },
       [&] { merge(a + ma, na - ma, b + mb, nb - mb, out + ma + mb, join); });
}

// sort_to sorts src (n long) using dst as scratch and leaves the result in
// dst when to_dst, else in src: msort.Sort's algorithm.
template <class Join>
void sort_to(int64_t* src, int64_t* dst, long n, bool to_dst, const Join& join) {
  if (n <= kSortGrain) {
    std::sort(src, src + n);
    if (to_dst) std::copy(src, src + n, dst);
    return;
  }
  long mid = n / 2;
  join([&] { sort_to(src, dst, mid, !to_dst, join); },
       [&] { sort_to(src + mid, dst + mid, n - mid, !to_dst, join); });
  const int64_t* from = to_dst ? src : dst;
  int64_t* to = to_dst ? dst : src;
  merge(from, mid, from + mid, n - mid, to, join);
}

// run_all measures every workload: parallel(f) runs f inside the peer's
// parallel region and returns its result, join is its fork, sum its
// parallel sum (called outside parallel: it makes its own region),
// spawn_join one empty spawn+join.
template <class Parallel, class Join, class Sum, class Spawn>
void run_all(const Args& a, Parallel parallel, const Join& join, Sum sum, Spawn spawn_join) {
  parallel([&] { return fib_fork(20, 2, join); });  // warm up the threads
  measure("fib", "serial", [&] { return fib(a.fib_n); });
  measure("fib", "par", [&] { return parallel([&] { return fib_fork(a.fib_n, 2, join); }); });
  measure("cutoff", "par", [&] { return parallel([&] { return fib_fork(a.fib_n, a.cutoff, join); }); });
  {
    auto v = sum_input(a.sum_n);
    measure("sum", "serial", [&] { return uint64_t(sum_serial(v)); });
    measure("sum", "par", [&] { return uint64_t(sum(v)); });
  }
  {
    auto in = random_ints(a.sort_n);
    auto v = in;
    std::vector<int64_t> tmp(v.size());
    measure("sort", "serial", [&] { std::sort(v.begin(), v.end()); return uint64_t(0); },
            [&](uint64_t) { return sorted_check(v, in); });
    v = in;
    measure("sort", "par", [&] { return parallel([&] { sort_to(v.data(), tmp.data(), long(v.size()), false, join); return uint64_t(0); }); },
            [&](uint64_t) { return sorted_check(v, in); });
  }
  measure("spawn", "par", [&] {
    return parallel([&] {
      for (long i = 0; i < a.joins; i++) spawn_join();
      return uint64_t(a.joins);
    });
  });
}

}  // namespace peer

#endif
