# PCL's own package config puts VTK's Qt 5 module into pcl_io's link interface and overwrites
# VTK_LIBRARIES, which breaks a Qt 6 build. We find PCL's headers and the few libraries we use
# ourselves and wrap them in one interface target, Cumulus::PCL.
find_path(PCL_INCLUDE_DIR pcl/point_types.h PATH_SUFFIXES pcl-1.13 pcl-1.14 pcl-1.12 REQUIRED)
find_package(Boost REQUIRED)  # headers only; PCL's public headers include them
set(_cumulus_pcl_libs)
foreach(component IN ITEMS common io io_ply kdtree search octree segmentation features registration
                           sample_consensus filters)
  find_library(PCL_${component}_LIBRARY NAMES pcl_${component} REQUIRED)
  list(APPEND _cumulus_pcl_libs ${PCL_${component}_LIBRARY})
endforeach()
find_library(FLANN_LIBRARY NAMES flann_cpp REQUIRED)
find_library(LZ4_LIBRARY NAMES lz4 REQUIRED)
add_library(cumulus_pcl INTERFACE)
target_include_directories(cumulus_pcl SYSTEM INTERFACE ${PCL_INCLUDE_DIR})
target_link_libraries(cumulus_pcl INTERFACE ${_cumulus_pcl_libs} ${FLANN_LIBRARY} ${LZ4_LIBRARY}
                                            Eigen3::Eigen Boost::headers)
add_library(Cumulus::PCL ALIAS cumulus_pcl)
message(STATUS "Cumulus: PCL headers in ${PCL_INCLUDE_DIR}")
