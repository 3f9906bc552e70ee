# One recursive ('+') recipe running a jobserver client: run with make -jN
# HELPER=command. The '+' makes make pass the jobserver descriptors.
all:
	+@$(HELPER)
.PHONY: all
