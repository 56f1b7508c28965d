/* nccl_decl.h — NCCL's entry-point prototypes for the reliability test programs, declared from
 * the one prototype list in include/ncclscope/nccl_abi.h (which declares only the types). */
#ifndef NCS_FAULTS_NCCL_DECL_H
#define NCS_FAULTS_NCCL_DECL_H
#include "ncclscope/nccl_abi.h"
#define NCS_FAULTS_DECL_(ret, name, params, args) ret nccl##name params;
NCCLSCOPE_PROTOTYPES(NCS_FAULTS_DECL_)
#undef NCS_FAULTS_DECL_
#endif
