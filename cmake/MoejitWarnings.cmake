# Project-wide compile flags, applied per target through moejit_project_target()
# so that third-party headers (LLVM, doctest) stay outside -Werror.
add_library(moejit_flags INTERFACE)
target_compile_options(moejit_flags INTERFACE -Wall -Wextra -Werror -Wno-missing-field-initializers)
target_include_directories(moejit_flags INTERFACE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
if(MOEJIT_SANITIZE)
  target_compile_options(moejit_flags INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer
                                               -fno-sanitize-recover=undefined)
  target_link_options(moejit_flags INTERFACE -fsanitize=address,undefined)
endif()

function(moejit_project_target target)
  target_link_libraries(${target} PRIVATE moejit_flags)
endfunction()
