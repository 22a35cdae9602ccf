# `pola serve` and `pola bench-serve` (apps/serve/, command lines in
# apps/cmd_serve.cpp and cmd_bench_serve.cpp): an HTTP server and its load
# generator over the public library only. Its include path is the public header
# folder, never the engine's sources. They run in a plugin, libpola_http.so,
# that `pola` loads for those two commands alone (serve/http_plugin.h), so no
# other command loads cpp-httplib and OpenSSL; the plugin finds the C API in
# `pola` (which holds the engine it calls), so the engine exists once.
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
set_target_properties(pola_serve PROPERTIES POSITION_INDEPENDENT_CODE ON)

# The plugin, beside `pola` in the build tree and in lib/ when installed; its
# RPATH ($ORIGIN, old-style as pola's: it also serves OpenSSL's own needs) finds
# the libraries a bundle copies beside it.
add_library(pola_http MODULE ${CMAKE_CURRENT_LIST_DIR}/http_plugin.cpp)
target_include_directories(pola_http PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(pola_http PRIVATE pola_serve)
target_compile_options(pola_http PRIVATE -Wall -Wextra)
set_target_properties(pola_http PROPERTIES PREFIX "lib" OUTPUT_NAME pola_http
                      LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR} INSTALL_RPATH "\$ORIGIN")
target_link_options(pola_http PRIVATE -Wl,--disable-new-dtags)
install(TARGETS pola_http LIBRARY DESTINATION lib COMPONENT cli)

target_sources(pola PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../http_plugin_loader.cpp)
target_include_directories(pola PRIVATE ${CMAKE_SOURCE_DIR}/engine/api/include)
target_link_libraries(pola PRIVATE polaformer_api_objects ${CMAKE_DL_LIBS})
target_link_options(pola PRIVATE -Wl,--dynamic-list=${CMAKE_CURRENT_LIST_DIR}/pola_exports.list)
set_property(TARGET pola APPEND PROPERTY LINK_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/pola_exports.list)
# Building `pola` builds its plugin: every command works from any build of it.
add_dependencies(pola pola_http)
