/* cuda_double_prop.h — the fields of CUDA 13.0's struct cudaDeviceProp (driver_types.h), in
 * order, as one X-macro list: F(type, name) for a scalar, A(type, name, n) for an array.
 *
 * Contract: cuda_double.h declares struct cudaDeviceProp from this list, and
 * tests/test_cuda_prop_abi.c expands the same list against the real header, so every field's
 * offset and size, and the struct's size, are proven equal to CUDA 13.0's. */
#ifndef NCCL_DOUBLE_CUDA_DOUBLE_PROP_H
#define NCCL_DOUBLE_CUDA_DOUBLE_PROP_H
#define CUDA_DOUBLE_PROP_FIELDS(F, A) \
  A(char, name, 256) F(cudaUUID_t, uuid) A(char, luid, 8) F(unsigned int, luidDeviceNodeMask) \
  F(size_t, totalGlobalMem) F(size_t, sharedMemPerBlock) F(int, regsPerBlock) F(int, warpSize) \
  F(size_t, memPitch) F(int, maxThreadsPerBlock) A(int, maxThreadsDim, 3) A(int, maxGridSize, 3) \
  F(size_t, totalConstMem) F(int, major) F(int, minor) F(size_t, textureAlignment) \
  F(size_t, texturePitchAlignment) F(int, multiProcessorCount) F(int, integrated) \
  F(int, canMapHostMemory) F(int, maxTexture1D) F(int, maxTexture1DMipmap) A(int, maxTexture2D, 2) \
  A(int, maxTexture2DMipmap, 2) A(int, maxTexture2DLinear, 3) A(int, maxTexture2DGather, 2) \
  A(int, maxTexture3D, 3) A(int, maxTexture3DAlt, 3) F(int, maxTextureCubemap) \
  A(int, maxTexture1DLayered, 2) A(int, maxTexture2DLayered, 3) A(int, maxTextureCubemapLayered, 2) \
  F(int, maxSurface1D) A(int, maxSurface2D, 2) A(int, maxSurface3D, 3) A(int, maxSurface1DLayered, 2) \
  A(int, maxSurface2DLayered, 3) F(int, maxSurfaceCubemap) A(int, maxSurfaceCubemapLayered, 2) \
  F(size_t, surfaceAlignment) F(int, concurrentKernels) F(int, ECCEnabled) F(int, pciBusID) \
  F(int, pciDeviceID) F(int, pciDomainID) F(int, tccDriver) F(int, asyncEngineCount) \
  F(int, unifiedAddressing) F(int, memoryBusWidth) F(int, l2CacheSize) F(int, persistingL2CacheMaxSize) \
  F(int, maxThreadsPerMultiProcessor) F(int, streamPrioritiesSupported) F(int, globalL1CacheSupported) \
  F(int, localL1CacheSupported) F(size_t, sharedMemPerMultiprocessor) F(int, regsPerMultiprocessor) \
  F(int, managedMemory) F(int, isMultiGpuBoard) F(int, multiGpuBoardGroupID) \
  F(int, hostNativeAtomicSupported) F(int, pageableMemoryAccess) F(int, concurrentManagedAccess) \
  F(int, computePreemptionSupported) F(int, canUseHostPointerForRegisteredMem) F(int, cooperativeLaunch) \
  F(size_t, sharedMemPerBlockOptin) F(int, pageableMemoryAccessUsesHostPageTables) \
  F(int, directManagedMemAccessFromHost) F(int, maxBlocksPerMultiProcessor) \
  F(int, accessPolicyMaxWindowSize) F(size_t, reservedSharedMemPerBlock) F(int, hostRegisterSupported) \
  F(int, sparseCudaArraySupported) F(int, hostRegisterReadOnlySupported) \
  F(int, timelineSemaphoreInteropSupported) F(int, memoryPoolsSupported) F(int, gpuDirectRDMASupported) \
  F(unsigned int, gpuDirectRDMAFlushWritesOptions) F(int, gpuDirectRDMAWritesOrdering) \
  F(unsigned int, memoryPoolSupportedHandleTypes) F(int, deferredMappingCudaArraySupported) \
  F(int, ipcEventSupported) F(int, clusterLaunch) F(int, unifiedFunctionPointers) \
  F(int, deviceNumaConfig) F(int, deviceNumaId) F(int, mpsEnabled) F(int, hostNumaId) \
  F(unsigned int, gpuPciDeviceID) F(unsigned int, gpuPciSubsystemID) \
  F(int, hostNumaMultinodeIpcSupported) A(int, reserved, 56)
#endif
