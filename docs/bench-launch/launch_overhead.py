import subprocess, time, os, statistics, sys
N = int(sys.argv[1])
only = sys.argv[2:]  # contenders to run, by name; none: all
off = dict(os.environ, NUMASTEAL_LAUNCH="off")
cmds = {
 "true": (["/bin/true"], None),
 "numasteal-launch true (off: exec)": (["/tmp/nsbin/numasteal-launch", "true"], off),
 "numasteal-launch true": (["/tmp/nsbin/numasteal-launch", "true"], None),
 "numasteal launch true": (["/tmp/nsbin/numasteal", "launch", "true"], None),
 "numasteal --help": (["/tmp/nsbin/numasteal", "--help"], None),
 "empty Go": (["/tmp/bench/empty"], None),
 "gcc -c": (["gcc", "-c", "t.c", "-o", "t.o"], None),
 "numasteal-launch gcc -c": (["/tmp/nsbin/numasteal-launch", "gcc", "-c", "t.c", "-o", "t.o"], None),
}
cmds = {k: v for k, v in cmds.items() if not only or k in only}
res = {k: [] for k in cmds}
for i in range(N):
    for k, (c, env) in cmds.items():
        t = time.perf_counter()
        subprocess.run(c, stdout=subprocess.DEVNULL, env=env)
        res[k].append(time.perf_counter() - t)
for k, v in res.items():
    v.sort()
    print(f"{k:36s} median {statistics.median(v)*1e3:7.2f} ms  p10 {v[len(v)//10]*1e3:7.2f}  p90 {v[9*len(v)//10]*1e3:7.2f}")
