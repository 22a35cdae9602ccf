# `pola eval` helpers (apps/eval/*.cpp), included from apps/CMakeLists.txt.
# zlib reads the gzip-compressed IDX files the Fashion-MNIST / MNIST packages ship.
find_package(ZLIB REQUIRED)
file(GLOB POLA_EVAL_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.cpp)
target_sources(pola PRIVATE ${POLA_EVAL_SOURCES})
target_link_libraries(pola PRIVATE ZLIB::ZLIB)
