# Helpers of `pola classify` (apps/cmd_classify.cpp), included from apps/CMakeLists.txt.
target_sources(pola PRIVATE ${CMAKE_CURRENT_LIST_DIR}/image_inputs.cpp)
