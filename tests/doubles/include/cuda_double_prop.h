/* cuda_double_prop.h — the fields of CUDA 13.0's struct cudaDeviceProp (driver_types.h), in
 * order, as one X-macro list: F(type, name) for a scalar, A(type, name, n) for an array; and the
 * device attributes (enum cudaDeviceAttr) the CUDA double answers, X(name, value).
 *
 * Contract: cuda_double.h declares struct cudaDeviceProp and enum cudaDeviceAttr from these
 * lists, and tests/test_cuda_prop_abi.c expands the same lists against the real header, so every
 * field's offset and size, the struct's size and every attribute's value are proven equal to
 * CUDA 13.0's. */
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

#define CUDA_DOUBLE_ATTRS(X) \
  X(MaxThreadsPerBlock, 1) X(MaxBlockDimX, 2) X(MaxBlockDimY, 3) X(MaxBlockDimZ, 4) \
  X(MaxGridDimX, 5) X(MaxGridDimY, 6) X(MaxGridDimZ, 7) X(MaxSharedMemoryPerBlock, 8) \
  X(TotalConstantMemory, 9) X(WarpSize, 10) X(MaxRegistersPerBlock, 12) X(ClockRate, 13) \
  X(MultiProcessorCount, 16) X(Integrated, 18) X(CanMapHostMemory, 19) X(ConcurrentKernels, 31) \
  X(EccEnabled, 32) X(PciBusId, 33) X(PciDeviceId, 34) X(TccDriver, 35) X(MemoryClockRate, 36) \
  X(GlobalMemoryBusWidth, 37) X(L2CacheSize, 38) X(MaxThreadsPerMultiProcessor, 39) \
  X(AsyncEngineCount, 40) X(UnifiedAddressing, 41) X(PciDomainId, 50) \
  X(ComputeCapabilityMajor, 75) X(ComputeCapabilityMinor, 76) \
  X(MaxSharedMemoryPerMultiprocessor, 81) X(MaxRegistersPerMultiprocessor, 82) X(ManagedMemory, 83) \
  X(IsMultiGpuBoard, 84) X(MultiGpuBoardGroupID, 85) X(HostNativeAtomicSupported, 86) \
  X(CooperativeLaunch, 95) X(MaxSharedMemoryPerBlockOptin, 97) X(MaxBlocksPerMultiprocessor, 106) \
  X(MemoryPoolsSupported, 115) X(GPUDirectRDMASupported, 116) X(ClusterLaunch, 120) X(Max, 148)
#endif
