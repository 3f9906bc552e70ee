//! The Rayon peer of `numasteal bench forkjoin --peers`: the workloads of
//! bench/peers/common/peer.h with `rayon::join` forks and a parallel
//! iterator for the sum, on a pool of the given number of threads. Its
//! output lines are the C++ peers' (parsed by bench/forkjoin_peers_parse.go).

use std::io::Write;
use std::time::Instant;

struct Args {
    threads: usize,
    fib_n: u32,
    cutoff: u32,
    sum_n: usize,
    sort_n: usize,
    joins: u64,
}

fn parse_args() -> Args {
    let v: Vec<String> = std::env::args().collect();
    let num = |i: usize| -> u64 {
        v.get(i).and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            eprintln!("usage: {} threads fib_n cutoff sum_n sort_n joins", v[0]);
            std::process::exit(2)
        })
    };
    if v.len() != 7 {
        num(99);
    }
    let a = Args {
        threads: num(1) as usize,
        fib_n: num(2) as u32,
        cutoff: num(3) as u32,
        sum_n: num(4) as usize,
        sort_n: num(5) as usize,
        joins: num(6),
    };
    if a.threads < 1 || a.fib_n < 2 || a.cutoff < 2 || a.sum_n < 1 || a.sort_n < 1 || a.joins < 1 {
        eprintln!("{}: every argument must be positive (fib_n, cutoff >= 2)", v[0]);
        std::process::exit(2);
    }
    a
}

/// Keeps the optimizer from seeing through x: std::hint::black_box is
/// stable from Rust 1.66 only, and Debian 12 has 1.63.
#[inline(always)]
fn black_box<T>(x: T) -> T {
    let r = unsafe { std::ptr::read_volatile(&x) };
    std::mem::forget(x);
    r
}

fn process_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The time this process's threads waited on a run queue for a CPU (the
/// second field of /proc/self/task/*/schedstat).
fn run_delay_ns() -> u64 {
    let dir = match std::fs::read_dir("/proc/self/task") {
        Ok(dir) => dir,
        Err(_) => return 0,
    };
    dir.flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().nth(1).and_then(|x| x.parse::<u64>().ok()))
        .sum()
}

/// Runs f once and prints workload variant wall_ns cpu_ns wait_ns check,
/// where check is post(f()), computed after the clocks stop.
fn measure<R>(workload: &str, variant: &str, f: impl FnOnce() -> R, post: impl FnOnce(R) -> u64) {
    let w0 = run_delay_ns();
    let c0 = process_cpu_ns();
    let t0 = Instant::now();
    let r = f();
    let wall = t0.elapsed().as_nanos() as u64;
    let c1 = process_cpu_ns();
    let w1 = run_delay_ns();
    let check = post(r);
    let mut out = std::io::stdout().lock();
    writeln!(out, "{workload} {variant} {wall} {} {} {check}", c1 - c0, w1 - w0).unwrap();
    out.flush().unwrap();
}

#[inline(never)]
fn fib(n: u32) -> u64 {
    if n < 2 {
        n as u64
    } else {
        fib(n - 1) + fib(n - 2)
    }
}

/// fib with a rayon::join at every call with n >= cutoff; a leaf (n < 2)
/// returns n as fib's do, without a call.
fn fib_fork(n: u32, cutoff: u32) -> u64 {
    if n < 2 {
        return n as u64;
    }
    if n < cutoff {
        return fib(n);
    }
    let (a, b) = rayon::join(|| fib_fork(n - 1, cutoff), || fib_fork(n - 2, cutoff));
    a + b
}

/// splitmix64, as in peer.h.
fn random_ints(n: usize) -> Vec<i64> {
    let mut x: u64 = 1;
    (0..n)
        .map(|_| {
            x = x.wrapping_add(0x9E3779B97F4A7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
            ((z ^ (z >> 31)) >> 1) as i64
        })
        .collect()
}

fn sorted_check(v: &[i64], input: &[i64]) -> u64 {
    let sum = |s: &[i64]| s.iter().fold(0u64, |a, &e| a.wrapping_add(e as u64));
    (v.len() == input.len() && v.windows(2).all(|w| w[0] <= w[1]) && sum(v) == sum(input)) as u64
}

const SORT_GRAIN: usize = 1 << 16;

fn merge_seq(a: &[i64], b: &[i64], out: &mut [i64]) {
    let (mut i, mut j) = (0, 0);
    for o in out.iter_mut() {
        if j == b.len() || (i < a.len() && a[i] <= b[j]) {
            *o = a[i];
            i += 1;
        } else {
            *o = b[j];
            j += 1;
        }
    }
}

fn merge<'a>(mut a: &'a [i64], mut b: &'a [i64], out: &mut [i64]) {
    if a.len() < b.len() {
        std::mem::swap(&mut a, &mut b);
    }
    if a.len() + b.len() <= SORT_GRAIN {
        merge_seq(a, b, out);
        return;
    }
    let ma = a.len() / 2;
    let mb = b.partition_point(|&x| x < a[ma]);
    let (o1, o2) = out.split_at_mut(ma + mb);
    rayon::join(|| merge(&a[..ma], &b[..mb], o1), || merge(&a[ma..], &b[mb..], o2));
}

/// msort.Sort's algorithm: sorts src with dst as scratch, the result in
/// dst when to_dst, else in src.
fn sort_to(src: &mut [i64], dst: &mut [i64], to_dst: bool) {
    if src.len() <= SORT_GRAIN {
        src.sort_unstable();
        if to_dst {
            dst.copy_from_slice(src);
        }
        return;
    }
    let mid = src.len() / 2;
    {
        let (s1, s2) = src.split_at_mut(mid);
        let (d1, d2) = dst.split_at_mut(mid);
        rayon::join(|| sort_to(s1, d1, !to_dst), || sort_to(s2, d2, !to_dst));
    }
    if to_dst {
        merge(&src[..mid], &src[mid..], dst);
    } else {
        merge(&dst[..mid], &dst[mid..], src);
    }
}

fn main() {
    let a = parse_args();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(a.threads).build().expect("rayon pool");
    println!("peer rayon {} {}", option_env!("RAYON_VERSION").unwrap_or("1"), a.threads);
    let id = |r: u64| r;
    pool.install(|| fib_fork(20, 2)); // warm up the threads
    measure("fib", "serial", || fib(black_box(a.fib_n)), id);
    measure("fib", "par", || pool.install(|| fib_fork(black_box(a.fib_n), 2)), id);
    measure("cutoff", "par", || pool.install(|| fib_fork(black_box(a.fib_n), a.cutoff)), id);
    {
        use rayon::prelude::*;
        let v: Vec<i64> = (0..a.sum_n as i64).collect();
        measure("sum", "serial", || black_box(&v).iter().sum::<i64>() as u64, id);
        measure("sum", "par", || pool.install(|| black_box(&v).par_iter().sum::<i64>() as u64), id);
    }
    {
        let input = random_ints(a.sort_n);
        let check = |v: Vec<i64>| sorted_check(&v, &input);
        let mut v = input.clone();
        measure("sort", "serial", || { v.sort_unstable(); v }, check);
        let (mut v, mut tmp) = (input.clone(), vec![0i64; input.len()]);
        measure("sort", "par", || { pool.install(|| sort_to(&mut v, &mut tmp, false)); v }, check);
    }
    measure(
        "spawn",
        "par",
        || {
            pool.install(|| {
                for _ in 0..a.joins {
                    rayon::join(|| black_box(()), || black_box(()));
                }
                a.joins
            })
        },
        id,
    );
}
