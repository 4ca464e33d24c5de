# A deterministic synthetic series for benchmarks: n points (default 100000) of
#   x[t] = sin(2 pi t / 24) + 0.5 sin(2 pi t / 168) + 0.25 sin(2 pi t / 1000 + 1) + 0.1 e[t]
# (the shape of scripts in ../shared/reference/pytorch-baseline.md), with e[t] standard normal
# noise from the MINSTD generator (Park-Miller, exact in double) and the Box-Muller transform, so the file
# is the same on every machine. Usage: awk -f bench/synthetic.awk -v n=100000 > synthetic.csv
BEGIN {
    if (n == "")
        n = 100000
    pi = atan2(0, -1)
    state = 1234
    print "value"
    for (t = 0; t < n; t++) {
        noise = normal()
        x = sin(2 * pi * t / 24) + 0.5 * sin(2 * pi * t / 168) + 0.25 * sin(2 * pi * t / 1000 + 1)
        printf "%.6f\n", x + 0.1 * noise
    }
}

function uniform() {
    state = (state * 48271) % 2147483647
    return state / 2147483647
}

function normal() {
    return sqrt(-2 * log(uniform())) * cos(2 * pi * uniform())
}
