#pragma once
// The DLPack C structs (ABI v1.x of the open DLPack spec), written out here so
// the binding needs no extra build dependency. Only what Orrery exports is
// declared: host and CUDA devices, integer/float/bool types.

#include <cstdint>

extern "C" {

/// Device kinds of the DLPack spec that Orrery tensors live on.
typedef enum {
    kDLCPU = 1,
    kDLCUDA = 2,
} DLDeviceType;

typedef struct {
    DLDeviceType device_type;
    int32_t device_id;
} DLDevice;

/// Type codes of the DLPack spec.
typedef enum {
    kDLInt = 0U,
    kDLUInt = 1U,
    kDLFloat = 2U,
    kDLBool = 6U,
} DLDataTypeCode;

typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

typedef struct {
    void* data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t* shape;
    int64_t* strides; ///< in elements
    uint64_t byte_offset;
} DLTensor;

/// Pre-1.0 capsule payload ("dltensor").
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void* manager_ctx;
    void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)

/// 1.x capsule payload ("dltensor_versioned").
typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void* manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned* self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

} // extern "C"
