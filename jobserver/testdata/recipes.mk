# Twelve recipes that record when they start and end. Run with OUT=dir and
# no -j: make takes its slots from the jobserver in MAKEFLAGS.
JOBS := 1 2 3 4 5 6 7 8 9 10 11 12
all: $(addprefix job,$(JOBS))
job%:
	@s=$$(date +%s.%N); sleep 0.3; e=$$(date +%s.%N); echo "$$s $$e" > '$(OUT)/$@'
.PHONY: all
