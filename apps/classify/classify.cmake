# Helpers of `pola classify` (apps/cmd_classify.cpp), included from apps/CMakeLists.txt.
target_sources(pola PRIVATE ${CMAKE_CURRENT_LIST_DIR}/image_inputs.cpp)

# The JSON answer for one image, shared with `pola serve` (apps/serve): plain
# data in, JSON out, so the server needs nothing but the public library.
add_library(pola_class_ranking STATIC ${CMAKE_CURRENT_LIST_DIR}/class_ranking.cpp)
target_include_directories(pola_class_ranking PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(pola_class_ranking PUBLIC nlohmann_json::nlohmann_json)
target_link_libraries(pola PRIVATE pola_class_ranking)
