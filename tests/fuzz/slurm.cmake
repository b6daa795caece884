# src/idle/idle_slurm.c: `scontrol show job -d` text and Slurm host lists
if(TARGET gpufl_idle)
  gpufl_fuzz_target(slurm
    REPLAY_LIBS gpufl_idle
    FUZZ_SOURCES ${PROJECT_SOURCE_DIR}/src/idle/idle_slurm.c
    # the rest of the idle library linked as built (no coverage): the
    # parser is what this target fuzzes
    FUZZ_LIBS gpufl_idle)
endif()
