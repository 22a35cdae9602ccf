# `pola quantize` helpers (apps/quantize/*.cpp), included from apps/CMakeLists.txt.
file(GLOB POLA_QUANTIZE_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.cpp)
target_sources(pola PRIVATE ${POLA_QUANTIZE_SOURCES})
