# The BLAS kernel. OpenBLAS picks its kernel for the CPU it runs on, and the
# kernel decides the last bits of every result: two machines with other
# kernels agree only to about 1e-15 relative. So the pipeline fixes it:
# BLAS_CORE (default Haswell, the AVX2 kernel every x86-64 CPU since 2013
# runs; an OPENBLAS_CORETYPE already set in the environment wins) is
# exported as OPENBLAS_CORETYPE to every program, and BLAS_CORE=native lets
# OpenBLAS choose. The kernel and the library version are a parameter group
# of every stage that calls BLAS, and the report and archive MANIFEST record
# them (build/report/blas.tsv, from qk-report --blas-info, which also fails
# if OpenBLAS does not run the kernel asked for).

BLAS_AUTO := $(if $(filter x86_64,$(shell uname -m)),$(if $(shell grep -qw avx2 /proc/cpuinfo \
  2>/dev/null && echo y),Haswell,native),native)
# (the default, for the rebuild commands, is the kernel chosen without settings)
ifneq ($(OPENBLAS_CORETYPE),)
BLAS_CORE ?= $(OPENBLAS_CORETYPE)
endif
$(call param,BLAS_CORE,$(BLAS_AUTO),blas)
ifeq ($(BLAS_CORE),native)
unexport OPENBLAS_CORETYPE
else
export OPENBLAS_CORETYPE := $(BLAS_CORE)
endif
# Every program runs its own worker threads and gives each one BLAS thread
# (openblas_set_num_threads(1)), so the results do not depend on this. Set
# before OpenBLAS loads, it also keeps the library from starting its thread
# pool, whose idle threads spin for about 0.1 s of CPU in every process.
export OPENBLAS_NUM_THREADS := 1
BLAS_VERSION := $(shell dpkg-query -W -f='$${Version}' libopenblas0 2>/dev/null)
$(call param_group,blas,BLAS_CORE openblas=$(or $(BLAS_VERSION),unknown))

build/report/blas.tsv: build/params/blas.txt $(call prog,qk-report)
	@mkdir -p $(@D)
	$(quiet)bin/qk-report --blas-info > $@.tmp && mv -f $@.tmp $@
