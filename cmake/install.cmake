# winfer as an installable library (docs/EMBEDDING.md). Included at the end of the top-level
# CMakeLists.txt, once every target exists.
#
#   cmake --install build --prefix /opt/winfer
#
# installs
#   include/winfer/*.h            the public headers only (winfer.h is the umbrella, winfer_c.h the C API)
#   lib/libwinfer.so.0.1.0 (+ links)  winfer::winfer         everything in one shared library
#   lib/libwinfer.a                   winfer::winfer_static  the same objects as one archive
#   lib/cmake/winfer/             find_package(winfer CONFIG REQUIRED)
#   lib/pkgconfig/winfer.pc       pkg-config --cflags --libs winfer (add --static for libwinfer.a)
#   bin/winfer                    the CLI
#
# Both libraries are made of the objects of winfer_kernels, winfer_core and winfer_engine, compiled
# once, with the CUDA backend as below. Operators are registered by an
# explicit table (layers/builtin_ops.cpp), not by static constructors, so a static link keeps
# every operator. Every symbol of the shared library is visible; only the installed headers
# are the API.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(WINFER_PUBLIC_HEADERS
    engine/include/winfer/winfer.h engine/include/winfer/winfer_c.h engine/include/winfer/log.h
    engine/include/winfer/status.h engine/include/winfer/shape.h engine/include/winfer/tensor.h
    engine/include/winfer/model.h engine/include/winfer/session.h engine/include/winfer/image.h
    engine/include/winfer/npy.h engine/include/winfer/custom_op.h engine/include/winfer/convert.h)

# The shared library opens the CUDA backend as its plug-in (<libdir>/winfer/libwinfer_cuda.so,
# installed beside it); the static archive links the backend in, since a statically linked
# program exports no symbols for a plug-in to use.
set(winfer_common_parts winfer_kernels winfer_core winfer_op_interface winfer_layers winfer_engine winfer_onnx_proto)
if(TARGET winfer_cuda_plugin)
  set(winfer_shared_parts ${winfer_common_parts} winfer_cuda_plugin_loader)
  set(winfer_static_parts ${winfer_common_parts} winfer_cuda_backend winfer_cuda_backend_linked winfer_cuda)
else()
  set(winfer_shared_parts ${winfer_common_parts} winfer_cuda_backend)  # the stub: no CUDA backend
  set(winfer_static_parts ${winfer_shared_parts})
endif()
foreach(kind shared static)
  set(winfer_${kind}_objects "")
  foreach(part IN LISTS winfer_${kind}_parts)
    list(APPEND winfer_${kind}_objects $<TARGET_OBJECTS:${part}>)
  endforeach()
endforeach()

# What the objects need from elsewhere (PRIVATE for the shared library; the static archive
# passes them on to whoever links it, and winferConfig.cmake finds them first).
set(winfer_lib_deps Threads::Threads yaml-cpp ZLIB::ZLIB protobuf::libprotobuf-lite ${CMAKE_DL_LIBS})
# cuBLAS and cuDNN are not among them: they are opened on first use (kernels/cuda/native/loader.h).
set(winfer_static_deps ${winfer_lib_deps})
if(TARGET winfer_cuda)
  list(APPEND winfer_static_deps CUDA::cudart_static)
endif()

add_library(winfer_lib SHARED ${winfer_shared_objects})
add_library(winfer_lib_static STATIC ${winfer_static_objects})
if(TARGET winfer_cuda_plugin)
  add_dependencies(winfer_lib winfer_cuda_plugin)
endif()
foreach(lib winfer_lib winfer_lib_static)
  set_target_properties(${lib} PROPERTIES OUTPUT_NAME winfer LINKER_LANGUAGE CXX
                                          ARCHIVE_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib
                                          LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)
  target_include_directories(${lib} INTERFACE $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/engine/include>
                                              $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(${lib} INTERFACE cxx_std_17)
endforeach()
set_target_properties(winfer_lib PROPERTIES EXPORT_NAME winfer VERSION ${PROJECT_VERSION}
                                            SOVERSION ${PROJECT_VERSION_MAJOR})
set_target_properties(winfer_lib_static PROPERTIES EXPORT_NAME winfer_static)
target_link_libraries(winfer_lib PRIVATE ${winfer_lib_deps})
winfer_order_code(winfer_lib)
if(WINFER_BUILD_TESTS AND winfer_code_order_link_options)
  # The hot-code list still names the library's functions, and the link put them together.
  add_test(NAME code_order.check COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/tests/code_order_test.py
                                         $<TARGET_FILE:winfer_lib> ${CMAKE_CURRENT_SOURCE_DIR}/cmake/code_order.txt)
endif()
target_link_libraries(winfer_lib_static INTERFACE ${winfer_static_deps})
# The same names inside this build tree, for tests and subprojects.
add_library(winfer::winfer ALIAS winfer_lib)
add_library(winfer::winfer_static ALIAS winfer_lib_static)

install(FILES ${WINFER_PUBLIC_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/winfer)
install(TARGETS winfer_lib winfer_lib_static EXPORT winferTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS winfer RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT winferTargets NAMESPACE winfer:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/winfer)

set(WINFER_PACKAGE_WITH_CUDA OFF)
if(TARGET winfer_cuda)
  set(WINFER_PACKAGE_WITH_CUDA ON)
endif()
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/winferConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/package/winferConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/winfer)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/package/winferConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/package/winferConfig.cmake ${CMAKE_BINARY_DIR}/package/winferConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/winfer)

# pkg-config: Libs.private lists what a static link needs besides libwinfer.a.
set(WINFER_PC_LIBS_PRIVATE "-lyaml-cpp -lprotobuf-lite -lz -lpthread -ldl")
if(TARGET winfer_cuda)
  string(APPEND WINFER_PC_LIBS_PRIVATE " -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -lrt")
endif()
# The prefix relative to the .pc file's folder, so that the installed tree can move (--prefix).
file(RELATIVE_PATH WINFER_PC_PREFIX_FROM_PCDIR /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" WINFER_PC_PREFIX_FROM_PCDIR "${WINFER_PC_PREFIX_FROM_PCDIR}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/winfer.pc.in ${CMAKE_BINARY_DIR}/package/winfer.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/package/winfer.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# ---- test: install into a temporary prefix, build apps/examples/embed against it -------------
# Not in sanitizer builds: they build only the test binaries (scripts/sanitize.sh), and a program
# linking an instrumented libwinfer would need the sanitizer's runtime too.
if(WINFER_BUILD_TESTS AND NOT WINFER_SANITIZE)
  add_test(NAME install.embed_example
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/install/install_test.sh
                   ${CMAKE_COMMAND} ${CMAKE_BINARY_DIR} ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_INSTALL_LIBDIR}
                   ${CMAKE_CXX_COMPILER} ${CMAKE_C_COMPILER})
  set_tests_properties(install.embed_example PROPERTIES LABELS install TIMEOUT 600)
endif()
