# Plots of an evs-bench run: gnuplot -e "dir='build/bench'" bench/plot.gp
# Reads dir/throughput.dat and dir/latency.dat (written by --plot-dir) and
# writes dir/throughput.svg and dir/latency.svg (fmt='png' for PNG).
if (!exists("dir")) dir = "build/bench-results"
if (!exists("fmt")) fmt = "svg"

if (fmt eq "png") { set terminal pngcairo size 900,560 font "sans,10" } else { set terminal svg size 900,560 dynamic font "sans,11" }
set output dir."/throughput.".fmt
set title "evstream throughput vs payload size (producer CPU 0, consumer CPU 1)"
set logscale x 2
set logscale y 10
set xlabel "payload bytes"
set ylabel "GB/s (payload)"
set key right bottom
set grid
set xrange [48:6000000]
set xtics ("64 B" 64, "1 KiB" 1024, "64 KiB" 65536, "1 MiB" 1048576, "4 MiB" 4194304)
dat = dir."/throughput.dat"
plot \
  "< awk '$1==\"reserve+peek\" && $2>0' ".dat using 2:4 with linespoints lw 2 title "zero-copy reserve/commit + peek/release", \
  "< awk '$1==\"emit+consume\" && $2>0' ".dat using 2:4 with linespoints lw 2 title "emit + batch consume", \
  "< awk '$1==\"emit+peek\" && $2>0' ".dat using 2:4 with linespoints lw 2 title "emit + peek/release (the default)", \
  "< awk '$1==\"reserve+peek/huge\" && $2>0' ".dat using 2:4 with linespoints lw 1 dt 2 title "zero-copy, huge pages", \
  "< awk '$1==\"reserve+peek\" && $2>0' ".dat using 2:5 with lines lw 3 lc rgb "black" title "limit: memcpy (same run)", \
  "< awk '$1==\"reserve+peek\" && $2>0' ".dat using 2:6 with linespoints lw 1 lc rgb "gray40" title "pipe (same events)", \
  "< awk '$1==\"reserve+peek\" && $2>0' ".dat using 2:7 with linespoints lw 1 lc rgb "gray70" title "Unix socket (same events)"

set output dir."/latency.".fmt
set title "one-way latency percentiles, 64-byte events (log scale)"
unset logscale x
set logscale y 10
set xtics auto
set format x "%g"
set xrange [*:*]
set ylabel "ns"
set xlabel ""
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set xtics rotate by -25 offset -2,0 font ",9" noenhanced
set key left top
set format y "10^{%L}"
plot dir."/latency.dat" using 2:xtic(1) title "p50", '' using 3 title "p90", \
     '' using 4 title "p99", '' using 5 title "p99.9", '' using 6 title "max"
