# src/client/sim_perturb.c: GPUFL_SIM_PERTURB, the simulated GPU's changes
# on purpose (sizes through the option engine's value parser)
gpufl_fuzz_target(sim_perturb
  REPLAY_LIBS gpufl_internal
  FUZZ_SOURCES ${PROJECT_SOURCE_DIR}/src/client/sim_perturb.c
               ${PROJECT_SOURCE_DIR}/src/common/opt_val.c
               ${PROJECT_SOURCE_DIR}/src/common/num.c)
