# Hot code together: libwinfer.so, the CLI and the Python extension are linked with lld, the
# functions that a network's load and runs execute (cmake/code_order.txt, made by
# scripts/code_order.sh) first and in one block. Why: a process maps a library's code 64 KiB
# around each page it executes (the kernel's fault-around, pages already in the page cache), and
# the ~250 pages a network executes lay scattered over 4.6 MiB of code, 40 windows: 2.3-2.5 MiB
# of ShuffleNetV2's 3.8 MiB beyond its weights at batch 1; in one block, 0.9-1.1 MiB
# (docs/PERFORMANCE.md, session 31). -ffunction-sections gives the linker each function as a
# section of its own, which is what it can move.
#
# Included before the targets: add_compile_options applies to the targets defined after it.
option(WINFER_CODE_ORDER "Link libwinfer.so, the CLI and the Python extension with lld, the functions networks execute first (cmake/code_order.txt)" ON)
option(WINFER_CODE_ORDER_TRACE "scripts/code_order.sh: every function on a page of its own, no ordering" OFF)
set(winfer_code_order_link_options "")
set(winfer_code_order_file ${CMAKE_CURRENT_SOURCE_DIR}/cmake/code_order.txt)
if(WINFER_CODE_ORDER_TRACE)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-ffunction-sections> $<$<COMPILE_LANGUAGE:CXX>:-falign-functions=4096>)
elseif(WINFER_CODE_ORDER AND NOT WINFER_SANITIZE)
  include(CheckLinkerFlag)
  check_linker_flag(CXX "-fuse-ld=lld" WINFER_HAVE_LLD)
  if(WINFER_HAVE_LLD)
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-ffunction-sections>)
    # Names of the list that a later change removed are skipped, without a warning each
    # (tests/code_order_test.py checks that the list still names the library's functions).
    set(winfer_code_order_link_options
        -fuse-ld=lld "LINKER:--symbol-ordering-file=${winfer_code_order_file}"
        "LINKER:--no-warn-symbol-ordering")
  else()
    message(STATUS "winfer: no lld (Debian: apt-get install lld): libwinfer.so and the CLI are linked "
                   "without the hot-code order (more of their code resident, nothing else changes)")
  endif()
endif()

# The order for a library, module or program of the engine's objects (libwinfer.so, the CLI,
# the Python extension).
function(winfer_order_code target)
  if(winfer_code_order_link_options)
    target_link_options(${target} PRIVATE ${winfer_code_order_link_options})
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${winfer_code_order_file})
  endif()
endfunction()
