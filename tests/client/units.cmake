# Unit tests of the client core (ring, dictionary, writer).
gpufl_unit_test(test_ring ${CMAKE_CURRENT_LIST_DIR}/test_ring.c LIBS gpufl_internal)
gpufl_unit_test(test_intern ${CMAKE_CURRENT_LIST_DIR}/test_intern.c LIBS gpufl_internal)
gpufl_unit_test(test_writer ${CMAKE_CURRENT_LIST_DIR}/test_writer.c LIBS gpufl_internal)
gpufl_unit_test(test_options ${CMAKE_CURRENT_LIST_DIR}/test_options.c LIBS gpufl_internal)
# The job and rank of a session, and GPUFL_SIM_PERTURB's parser.
gpufl_unit_test(client_job ${CMAKE_CURRENT_LIST_DIR}/test_job.c LIBS gpufl_internal)
# The host source against procfs fixtures.
gpufl_unit_test(test_host ${CMAKE_CURRENT_LIST_DIR}/test_host.c
                LIBS gpufl_internal m)
# The size rule of the versioned public structs, against the shared library
# as programs link it (an older and a newer header; docs/client.md).
gpufl_unit_test(client_options_abi ${CMAKE_CURRENT_LIST_DIR}/test_options_abi.c
                LIBS gpufl ${CMAKE_DL_LIBS})
# GPUFL_SCOPE_AUTO / GPUFL_SCOPE / gpufl::scope in C and in C++ (gpufl.h).
gpufl_unit_test(client_scope_macros_c
                ${CMAKE_CURRENT_LIST_DIR}/test_scope_macros.c LIBS gpufl)
gpufl_unit_test(client_scope_macros_cxx
                ${CMAKE_CURRENT_LIST_DIR}/test_scope_macros.cpp LIBS gpufl)
target_compile_options(client_scope_macros_cxx PRIVATE -Wall -Wextra -Werror
                       -Wshadow)
# Counter handles across gpufl_shutdown/gpufl_init (gpufl.h, docs/client.md).
gpufl_unit_test(client_counter_sessions
                ${CMAKE_CURRENT_LIST_DIR}/test_counter_sessions.c
                LIBS gpufl_internal)
# The flight recorder's in-memory window (window.c: bounds, eviction, ages).
gpufl_unit_test(test_window ${CMAKE_CURRENT_LIST_DIR}/test_window.c LIBS gpufl_internal)
# Pending triggers (trigger.c): each SIGUSR2 counted once.
gpufl_unit_test(client_trigger ${CMAKE_CURRENT_LIST_DIR}/test_trigger.c LIBS gpufl_internal)
# The simulated GPU's mangled kernel names read by c++filt as libgpufl's
# dict lines demangle them (binutils: scripts/deps/client.test).
gpufl_unit_test(client_sim_names ${CMAKE_CURRENT_LIST_DIR}/test_sim_names.c
                LIBS gpufl_internal)
