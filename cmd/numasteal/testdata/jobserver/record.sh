# record.sh DIR NAME: a job of 0.3 s that writes its start and end times
# (nanoseconds) to DIR/NAME.start and DIR/NAME.end, so that a test can count
# how many jobs ran at once.
date +%s%N >"$1/$2.start"
sleep 0.3
date +%s%N >"$1/$2.end"
