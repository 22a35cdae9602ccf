# Helpers of `pola attention-map` (apps/cmd_attention_map.cpp), included from
# apps/CMakeLists.txt. heatmap_image.cpp holds the stb_image_write implementation.
target_sources(pola PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/block_layout.cpp
  ${CMAKE_CURRENT_LIST_DIR}/capture_qk.cpp
  ${CMAKE_CURRENT_LIST_DIR}/heatmap_image.cpp
  ${CMAKE_CURRENT_LIST_DIR}/polarity_row.cpp)
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/heatmap_image.cpp PROPERTIES INCLUDE_DIRECTORIES ${STB_INCLUDE_DIR})
