# Web UI (web/): vitest unit tests of the data shaping, ESLint + Prettier,
# and end-to-end tests
# in headless Chromium (playwright-core) against the real gpufl-server filled
# with simulated sessions (web/e2e/run.mjs).  Each test skips (77) with the
# reason when node, web/node_modules (`make web`) or Chromium are missing.
# Screenshots of every view are kept in ${CMAKE_BINARY_DIR}/web-e2e/.
set(GPUFL_WEB_SRC ${PROJECT_SOURCE_DIR}/web)
set(GPUFL_WEB_OUT ${CMAKE_BINARY_DIR}/web-e2e)
set(GPUFL_WEB_SH ${CMAKE_CURRENT_LIST_DIR}/web_test.sh)

add_test(NAME web_unit COMMAND ${GPUFL_WEB_SH} unit ${GPUFL_WEB_SRC})
set_tests_properties(web_unit PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)

# ESLint (no `any`, React hooks rules, every eslint-disable still needed)
# and Prettier's formatting of web/ (docs/ui.md "Lint and format").
add_test(NAME web_lint COMMAND ${GPUFL_WEB_SH} lint ${GPUFL_WEB_SRC})
set_tests_properties(web_lint PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)

if(TARGET gpufl-server AND TARGET gpufl_example_train)
  add_test(NAME web_e2e COMMAND ${GPUFL_WEB_SH} e2e ${GPUFL_WEB_SRC}
                                ${CMAKE_BINARY_DIR}/bin ${GPUFL_WEB_OUT})
  set_tests_properties(web_e2e PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
    FIXTURES_SETUP web_e2e_run)
  # The memory flame graph and the fleet view need the server's memory-
  # profile and idle-verdict endpoints (docs/api.md "Memory profiles",
  # "Idle verdicts"); judged separately.
  foreach(what memory fleet)
    add_test(NAME web_e2e_${what}
      COMMAND ${GPUFL_WEB_SH} check ${GPUFL_WEB_OUT} ${what})
    set_tests_properties(web_e2e_${what} PROPERTIES TIMEOUT 30
      SKIP_RETURN_CODE 77 FIXTURES_REQUIRED web_e2e_run)
  endforeach()
  # Issue 18's completeness checks on 1M kernels (web_e2e runs them on
  # 200k): 50 random windows, canvas pixels against the API, and the API
  # lanes against GET /calls; about 70 s with the gcc build
  add_test(NAME web_complete_1m COMMAND ${GPUFL_WEB_SH} complete ${GPUFL_WEB_SRC}
                                        ${CMAKE_BINARY_DIR}/bin ${GPUFL_WEB_OUT} 1000000)
  set_tests_properties(web_complete_1m PROPERTIES TIMEOUT 900
    SKIP_RETURN_CODE 77 FIXTURES_REQUIRED web_e2e_run)
endif()
