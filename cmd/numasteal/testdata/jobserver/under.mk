# Run with make -j3: numasteal as a recursive ('+') recipe, running the
# commands in $(CMDS) with -j 0, beside two recipes of make's own that
# record their times like the commands do. $(NUMASTEAL) runs numasteal.
all: numasteal side1 side2

numasteal:
	+@$(NUMASTEAL) run --history= --progress=none -j 0 $(CMDS)

side1 side2:
	@sh $(REC) $(OUT) $@

.PHONY: all numasteal side1 side2
