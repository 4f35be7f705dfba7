# walk.awk - tools/walk/walk.sh's counter. Input: first the map lines
# "M OFFSET FUNCTION FILE" (addr2line's answers), then the trace's "E OFFSET"
# / "X OFFSET" lines. The walk starts at the first entry of function FROM
# and ends at the first exit of function TO after it (-v FROM=, TO=).
# Prints: the files visited, the stays (maximal runs of steps in one file),
# the stays per file, and the climbs back up (a return into a file lower in
# the call stack, from another file). With -v FUNCS=1 also the entries per
# function within the walk.
$1 == "M" { fn[$2] = $3; file[$2] = $4; next }
$1 == "E" {
	f = fn[$2]; fl = file[$2]
	if (!on && f == FROM) { on = 1; base = depth }
	depth++
	stack[depth] = fl; names[depth] = f
	if (on && !done) {
		seen[fl] = 1
		calls[fl " " f]++
		if (fl != cur) { stays++; per[fl]++; cur = fl }
	}
	next
}
$1 == "X" {
	f = names[depth]; fl = stack[depth]
	depth--
	if (on && !done) {
		if (f == TO && !ended) { ended = 1; done = 1; next }
		if (depth >= base && depth > 0 && stack[depth] != fl) {
			climbs++; stays++; per[stack[depth]]++; cur = stack[depth]
		}
		if (depth < base) done = 1
	}
	next
}
END {
	n = 0; for (k in seen) n++
	printf "files %d, stays %d, climbs back up %d\n", n, stays, climbs
	for (k in per) printf "  %3d stays  %s\n", per[k], k | "sort -rn"
	close("sort -rn")
	if (FUNCS == 1) {
		for (k in calls) printf "    %4d calls  %s\n", calls[k], k | "sort -rn"
		close("sort -rn")
	}
}
