# docs/: the option tables are made by the programs from the tables they
# parse with (--help-markdown; libgpufl's through opt_docs_client); this
# checks that they still match (tests/docs/check_opt_docs.py BIN DOCS
# --write regenerates them).
add_executable(opt_docs_client ${CMAKE_CURRENT_LIST_DIR}/opt_docs_client.c)
gpufl_target(opt_docs_client)
target_link_libraries(opt_docs_client PRIVATE gpufl_internal)

add_test(NAME docs_options
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_opt_docs.py
          ${CMAKE_BINARY_DIR}/bin ${PROJECT_SOURCE_DIR}/docs)
set_tests_properties(docs_options PROPERTIES TIMEOUT 120)
