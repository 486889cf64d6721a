# bench_store: listing / candidate index figures of docs/decisions.md#benchmarks (warm, cold, rebuild over 10,000
# stored sessions) through the store library. Included from bench/CMakeLists.txt.
add_executable(bench_store ${CMAKE_CURRENT_LIST_DIR}/store_bench.cpp)
target_link_libraries(bench_store PRIVATE acp_store ${DSH_ZSTD})
# bench_content: recall by content over a file root (issue 29): index build, size, query p50/p95
# beside the plain scan, freshness after a write, RSS.
add_executable(bench_content ${CMAKE_CURRENT_LIST_DIR}/content_bench.cpp)
target_link_libraries(bench_content PRIVATE acp_store)
# bench_pg_search: recall by content in a PostgreSQL store (bench/pg_bench.py runs it on its cluster).
add_executable(bench_pg_search ${CMAKE_CURRENT_LIST_DIR}/pg_search_bench.cpp)
target_link_libraries(bench_pg_search PRIVATE acp_store_pg)
