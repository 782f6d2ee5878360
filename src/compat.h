/*
 * compat.h
 *		The few server interfaces that differ between the PostgreSQL major
 *		versions gpujoin builds against (15 to 18), under one name each.
 *
 * 15 and 18 are built and tested (CI runs the whole suite on both); 16 and
 * 17 are covered by these guards, written from their release notes and
 * headers, and not tested.  Each guard names the version that changed the
 * interface, so that it can go when that version becomes the floor.
 */
#ifndef GJ_COMPAT_H
#define GJ_COMPAT_H

#include "postgres.h"

#include "utils/acl.h"

/* 16 folded pg_proc_aclcheck and its kin into object_aclcheck. */
#if PG_VERSION_NUM >= 160000
#include "catalog/pg_proc.h"
#define GjProcAclCheck(fn, role, mode) object_aclcheck(ProcedureRelationId, (fn), (role), (mode))
#else
#define GjProcAclCheck(fn, role, mode) pg_proc_aclcheck((fn), (role), (mode))
#endif

/*
 * 17 replaced backend ids with proc numbers (storage/backendid.h is gone):
 * the parallel leader's slot, and this backend's.
 */
#if PG_VERSION_NUM >= 170000
#include "storage/procnumber.h"
typedef ProcNumber GjBackendSlot;
#define GjLeaderSlot() ParallelLeaderProcNumber
#define GjMySlot() MyProcNumber
#else
#include "storage/backendid.h"
typedef BackendId GjBackendSlot;
#define GjLeaderSlot() ParallelLeaderBackendId
#define GjMySlot() MyBackendId
#endif

/* 18 lets a caller take a deferrable primary key; gpujoin never needs one. */
#if PG_VERSION_NUM >= 180000
#define GjRelationPrimaryKeyIndex(rel) RelationGetPrimaryKeyIndex((rel), false)
#else
#define GjRelationPrimaryKeyIndex(rel) RelationGetPrimaryKeyIndex(rel)
#endif

/*
 * 16 moved the permission-checking fields of a range table entry
 * (checkAsUser among them) to RTEPermissionInfo: the role a relation's
 * read is checked as, or InvalidOid for the current user.
 */
#if PG_VERSION_NUM >= 160000
#include "parser/parse_relation.h"
#define GjRteCheckAsUser(rte, estate) \
	((rte)->perminfoindex == 0 ? InvalidOid : \
	 getRTEPermissionInfo((estate)->es_rteperminfos, (rte))->checkAsUser)
#else
#define GjRteCheckAsUser(rte, estate) ((rte)->checkAsUser)
#endif

/*
 * 18 made an operator's btree interpretation generic (compare types for
 * any index AM): the list, its element type, and the strict inequalities.
 */
#include "utils/lsyscache.h"
#if PG_VERSION_NUM >= 180000
typedef OpIndexInterpretation GjOpInterpretation;
#define GjOpInterpretations(opno) get_op_index_interpretation(opno)
#define GjOpIsLess(bi) ((bi)->cmptype == COMPARE_LT)
#define GjOpIsGreater(bi) ((bi)->cmptype == COMPARE_GT)
#define GjOpIsNotEqual(bi) ((bi)->cmptype == COMPARE_NE)
#else
#include "access/stratnum.h"
typedef OpBtreeInterpretation GjOpInterpretation;
#define GjOpInterpretations(opno) get_op_btree_interpretation(opno)
#define GjOpIsLess(bi) ((bi)->strategy == BTLessStrategyNumber)
#define GjOpIsGreater(bi) ((bi)->strategy == BTGreaterStrategyNumber)
#define GjOpIsNotEqual(bi) ((bi)->strategy == ROWCOMPARE_NE)
#endif

/*
 * A range table entry copied from a subquery into query: from 16 its
 * permissions are an RTEPermissionInfo of the subquery's list, which the
 * copy must take along into query's list (before, they were in the entry).
 */
#if PG_VERSION_NUM >= 160000
#define GjCopyRtePermissions(query, from, rte) \
	do { \
		if ((rte)->perminfoindex != 0) \
		{ \
			(query)->rteperminfos = lappend((query)->rteperminfos, \
				copyObject(getRTEPermissionInfo((from)->rteperminfos, (rte)))); \
			(rte)->perminfoindex = list_length((query)->rteperminfos); \
		} \
	} while (0)
#else
#define GjCopyRtePermissions(query, from, rte) ((void) 0)
#endif

/* 18 moved the ExplainProperty* functions to their own header. */
#if PG_VERSION_NUM >= 180000
#define GJ_EXPLAIN_FORMAT_H "commands/explain_format.h"
#else
#define GJ_EXPLAIN_FORMAT_H "commands/explain.h"
#endif

#endif							/* GJ_COMPAT_H */
