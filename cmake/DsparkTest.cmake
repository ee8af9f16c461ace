# dspark_test(NAME SOURCES a.cpp ... LIBS lib ...)
# One executable per test file, so a file that does not compile breaks only itself.
function(dspark_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main GTest::gmock)
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/tests)
  target_compile_definitions(${name} PRIVATE
    DSPARK_SHARED_DIR="${DSPARK_SHARED_DIR}"
    DSPARK_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
    DSPARK_BINARY_DIR="${CMAKE_BINARY_DIR}")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 120
    PROPERTIES ENVIRONMENT "OMP_NUM_THREADS=1")
endfunction()
