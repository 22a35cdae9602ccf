# Helpers of `pola classify` (apps/cmd_classify.cpp), included from apps/CMakeLists.txt.
target_sources(pola PRIVATE ${CMAKE_CURRENT_LIST_DIR}/image_inputs.cpp)

# The JSON answer for one image, shared with `pola serve` (apps/serve) and the
# Python binding (the Dask example's JSON lines): plain data in, JSON out, over
# the public C API (pola_top_k), which the program linking it provides: `pola`
# holds the API objects, the others link libpolaformer. Position-independent
# for the Python extension.
add_library(pola_class_ranking STATIC ${CMAKE_CURRENT_LIST_DIR}/class_ranking.cpp)
target_include_directories(pola_class_ranking PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}
                                              PRIVATE ${CMAKE_SOURCE_DIR}/engine/api/include)
target_link_libraries(pola_class_ranking PUBLIC nlohmann_json::nlohmann_json)
set_target_properties(pola_class_ranking PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_link_libraries(pola PRIVATE pola_class_ranking)
