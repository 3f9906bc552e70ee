# Twelve recipes of 0.3 s each, recording their start and end times in
# $(OUT) with the script $(REC). Run it without -j: under a jobserver make
# takes its slots from the jobserver in MAKEFLAGS.
JOBS := 01 02 03 04 05 06 07 08 09 10 11 12

all: $(JOBS)

$(JOBS):
	@sh $(REC) $(OUT) make$@

.PHONY: all $(JOBS)
