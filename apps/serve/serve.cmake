# `pola serve` (apps/serve/, command line in apps/cmd_serve.cpp): an HTTP
# server over the public library only. Its include path is the public header
# folder, never the engine's sources; the C API objects are linked into `pola`
# (which already holds the engine they call), so the tool stays one binary.
find_package(PkgConfig REQUIRED)
pkg_check_modules(POLA_HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
find_package(Threads REQUIRED)
add_library(pola_serve STATIC
  ${CMAKE_CURRENT_LIST_DIR}/buffered_stream.cpp
  ${CMAKE_CURRENT_LIST_DIR}/connection_reactor.cpp
  ${CMAKE_CURRENT_LIST_DIR}/endpoints.cpp
  ${CMAKE_CURRENT_LIST_DIR}/infer_protocol.cpp
  ${CMAKE_CURRENT_LIST_DIR}/load_generator.cpp
  ${CMAKE_CURRENT_LIST_DIR}/metrics.cpp
  ${CMAKE_CURRENT_LIST_DIR}/model_batcher.cpp
  ${CMAKE_CURRENT_LIST_DIR}/request_head.cpp
  ${CMAKE_CURRENT_LIST_DIR}/server.cpp)
target_include_directories(pola_serve PUBLIC ${CMAKE_SOURCE_DIR}/engine/api/include ${CMAKE_CURRENT_LIST_DIR}
                                             ${CMAKE_CURRENT_LIST_DIR}/../classify)
target_link_libraries(pola_serve PUBLIC PkgConfig::POLA_HTTPLIB pola_class_ranking nlohmann_json::nlohmann_json
                                        Threads::Threads)
target_compile_options(pola_serve PRIVATE -Wall -Wextra -Werror=deprecated-declarations)
target_link_libraries(pola PRIVATE pola_serve polaformer_api_objects)
