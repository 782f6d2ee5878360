/*
 * team.cu
 *		One join on several GPUs: a team (src/core/team.c) of one engine a
 *		device, and what the engines share to split the work.
 *
 * Every member holds the whole index (the points, their order, the filter
 * rows) on its own device and takes its work from a pool the members share,
 * as it becomes free: a GPU that runs faster, or has fewer pairs in its
 * part, takes more.  Splitting by halves fixed in advance would leave one
 * GPU idle whenever the halves cost differently, which skewed data makes
 * the rule rather than the exception.  Each engine says what its units of
 * work are:
 *
 * - the engines of the batch driver (pair_driver.cu: the tile join) plan
 *   the same list of batches on every member from the inputs and the
 *   requested sizes alone; each member publishes a fingerprint of its list
 *   and its length before it runs (gj_gpu_share_publish), the lists must
 *   agree, and each batch runs where it is claimed first
 *   (gj_gpu_share_claim).  Reruns of a batch that overflowed its buffer
 *   stay with the member that ran it.
 * - the kNN join puts its queries in one order on every member (checked
 *   by the same fingerprint, of the query ids in that order) and each
 *   member takes the next run of positions from a shared cursor
 *   (gj_gpu_share_next), as large as its own batches.
 *
 * A team that cannot start (a member short of memory, lists that differ,
 * a device missing) is freed, and the first device runs the join alone,
 * as it would with one GPU: never fewer rows, only less speed.
 */
#include <stdlib.h>
#include <string.h>

#include "gpu_common.cuh"

struct gj_gpu_share
{
	pthread_mutex_t mu;
	int			published;		/* members that published their plan */
	int			differ;			/* a member's plan differed from the first's */
	uint64_t	fp;
	int64_t		nseq;
	uint8_t    *claimed;		/* nseq flags */
	int64_t		next;			/* the kNN join's cursor (atomic) */
	int			members;
	int			devices[GJ_MAX_GPUS];	/* member i's device */
	/* gj_gpu_share_upload's meetings (a barrier of every member) */
	pthread_cond_t cv;
	int			arrived;		/* members at the current meeting */
	int			all_ok;			/* ... and whether each said ok */
	int			last_ok;		/* the last meeting's outcome */
	int64_t		meeting;		/* meetings held */
	int			broken;			/* a member failed: no meeting can be full */
	void	   *part[GJ_MAX_GPUS];	/* member i's copy, on its device */
};

/*
 * A fingerprint step, a word at a time: a fingerprint, not a defence.
 * Byte-wise FNV-1a took 8 dependent multiplies a word: over the 1M query
 * ids of a kNN join, 7.6 ms against 1.4 (2-core machine), paid by every
 * member before its search.
 */
uint64_t
gj_fp_mix(uint64_t h, uint64_t v)
{
	h = (h ^ v) * 0x9E3779B97F4A7C15ULL;
	return h ^ (h >> 29);
}

/*
 * A member's plan: nseq units of work with fingerprint fp.  GJ_OK when it
 * is the first or agrees with the first; GJ_ERR_LIMIT when not (the team
 * then gives the join to one device).
 */
gj_status
gj_gpu_share_publish(gj_gpu_share *s, uint64_t fp, int64_t nseq)
{
	gj_status	st = GJ_OK;

	pthread_mutex_lock(&s->mu);
	if (s->published == 0)
	{
		s->fp = fp;
		s->nseq = nseq;
		s->claimed = (uint8_t *) calloc(nseq > 0 ? (size_t) nseq : 1, 1);
		if (s->claimed == NULL)
			st = GJ_ERR_NOMEM;
	}
	else if (s->fp != fp || s->nseq != nseq || s->claimed == NULL)
	{
		s->differ = 1;
		st = GJ_ERR_LIMIT;
	}
	s->published++;
	pthread_mutex_unlock(&s->mu);
	return st;
}

/* Whether the caller takes unit seq of the published plan (1) or another member has (0). */
int
gj_gpu_share_claim(gj_gpu_share *s, int64_t seq)
{
	if (seq < 0 || seq >= s->nseq)
		return 1;				/* not a planned unit: the member's own */
	return __atomic_exchange_n(&s->claimed[seq], (uint8_t) 1, __ATOMIC_RELAXED) == 0;
}

/* The first of the next n positions of the shared order. */
int64_t
gj_gpu_share_next(gj_gpu_share *s, int64_t n)
{
	return __atomic_fetch_add(&s->next, n, __ATOMIC_RELAXED);
}

/* How many members share the work: engines cut it into enough pieces for all. */
int
gj_gpu_share_members(const gj_gpu_share *s)
{
	return s->members;
}

/*
 * Every member waits here until all have come (1: each said ok), or until
 * one has failed elsewhere and so never will (0).  must_all: the caller
 * knows every member is on its way (the last meeting was full), and waits
 * for them even if the team broke meanwhile.
 */
static int
share_meet(gj_gpu_share *s, int ok, int must_all)
{
	int64_t		m;
	int			r;

	pthread_mutex_lock(&s->mu);
	m = s->meeting;
	s->all_ok &= ok;
	if (++s->arrived == s->members)
	{
		s->last_ok = s->all_ok;
		s->arrived = 0;
		s->all_ok = 1;
		s->meeting++;
		pthread_cond_broadcast(&s->cv);
	}
	else
		while (s->meeting == m && (must_all || !s->broken))
			pthread_cond_wait(&s->cv, &s->mu);
	r = s->meeting != m ? s->last_ok : 0;
	pthread_mutex_unlock(&s->mu);
	return r;
}

/* Whether this member's device can read every other member's memory directly (enabled here). */
static int
peers_reachable(const gj_gpu_share *s, int member)
{
	int			dev = s->devices[member];

	for (int i = 0; i < s->members; i++)
	{
		int			can = 0;
		cudaError_t e;

		if (s->devices[i] == dev)
			continue;
		if (cudaDeviceCanAccessPeer(&can, dev, s->devices[i]) != cudaSuccess || !can)
		{
			cudaGetLastError();
			return 0;
		}
		e = cudaDeviceEnablePeerAccess(s->devices[i], 0);
		if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
		{
			cudaGetLastError();
			return 0;
		}
		cudaGetLastError();
	}
	return 1;
}

/*
 * bytes of pageable host memory src to dst on every member's device, each
 * member's dst its own.  The upload from pageable memory is bound by the
 * host's copies into pinned chunks (gj_upload_staged: 22-23 ms for 1 GB on
 * the H200 host, the DMA alone 19.5; stop 59's staging took 50-85 ms for
 * two members at once), so each member stages 1/m of the bytes (in
 * smaller pieces: gj_upload_staged_by) and then
 * copies the other parts from the other members' devices (NVLink: 512 MB
 * in 1.4 ms).  Where a
 * member cannot reach the others' memory, or a part failed, every member
 * stages the rest itself.  Every member of the team must call it, with the
 * same bytes; dst stays untouched by others once it returns.  Waited for.
 */
cudaError_t
gj_gpu_share_upload(gj_gpu_share *s, int member, void *dst, const void *src, size_t bytes,
					cudaStream_t stream)
{
	int			m = s->members;
	size_t		lo = bytes / m * member,
				hi = member == m - 1 ? bytes : bytes / m * (member + 1);
	cudaError_t e;

	e = gj_upload_staged_by((char *) dst + lo, (const char *) src + lo, hi - lo, stream, m > 1);
	s->part[member] = dst;
	if (share_meet(s, e == cudaSuccess && peers_reachable(s, member), 0))
	{
		/* every part is on its member's device: the others' over the peer links */
		for (int i = 0; i < m && e == cudaSuccess; i++)
		{
			size_t		a = bytes / m * i,
						b = i == m - 1 ? bytes : bytes / m * (i + 1);

			if (i != member)
				e = cudaMemcpyPeerAsync((char *) dst + a, s->devices[member],
										(const char *) s->part[i] + a, s->devices[i], b - a,
										stream);
		}
		{
			/* also after a failure: nothing of ours may be in flight when the others go on */
			cudaError_t e2 = cudaStreamSynchronize(stream);

			e = e == cudaSuccess ? e2 : e;
		}
		/* no member frees or rewrites its copy while another still reads it */
		share_meet(s, 1, 1);
		return e;
	}
	if (e == cudaSuccess && lo > 0)
		e = gj_upload_staged_by(dst, src, lo, stream, m > 1);
	if (e == cudaSuccess && hi < bytes)
		e = gj_upload_staged_by((char *) dst + hi, (const char *) src + hi, bytes - hi, stream, m > 1);
	return e;
}

/* A member that will not call gj_gpu_share_upload: the others must not wait for its part. */
void
gj_gpu_share_decline(gj_gpu_share *s)
{
	share_meet(s, 0, 0);
}

/* Whether opt asks for a team: several devices, and not already a member. */
int
gj_gpu_team_wanted(const gj_gpu_options *opt)
{
	return opt != NULL && opt->ndevices > 1 && opt->share == NULL;
}

/* Why the last team of this process did not start ("" when it did). */
static char team_why[256];

typedef struct team_ctx
{
	const gj_gpu_options *opt;
	gj_gpu_member_fn start;
	void	   *arg;
	gj_gpu_share share;
	char		err[GJ_MAX_GPUS][256];
} team_ctx;

static void
team_cleanup(void *p)
{
	team_ctx   *c = (team_ctx *) p;

	pthread_cond_destroy(&c->share.cv);
	pthread_mutex_destroy(&c->share.mu);
	free(c->share.claimed);
	free(c);
}

/* Member i: device i of the list becomes its thread's, then the engine starts there. */
static gj_status
member_start(void *p, int i, gj_engine **out)
{
	team_ctx   *c = (team_ctx *) p;
	gj_gpu_options o = *c->opt;
	gj_status	st;

	o.ndevices = 1;
	o.devices[0] = c->opt->devices[i];
	o.share = &c->share;
	o.member = i;
	st = gj_gpu_use_device(o.devices[0], c->err[i], sizeof(c->err[i]));
	if (st == GJ_OK)
		st = c->start(c->arg, &o, out, c->err[i], sizeof(c->err[i]));
	if (st != GJ_OK)
	{
		/* the first member's failure is the team's reason (read once all have ended) */
		pthread_mutex_lock(&c->share.mu);
		c->share.broken = 1;	/* members waiting to meet it go on alone */
		pthread_cond_broadcast(&c->share.cv);
		if (team_why[0] == '\0')
			snprintf(team_why, sizeof(team_why), "GPU %d: %s", o.devices[0],
					 c->err[i][0] != '\0' ? c->err[i] : gj_status_name(st));
		pthread_mutex_unlock(&c->share.mu);
	}
	return st;
}

extern "C" const char *
gj_gpu_team_failure(void)
{
	return team_why;
}

/*
 * The engine start(arg, opt, ..) as a team over opt's devices, or, when the
 * team cannot start, on the first device alone (gj_gpu_team_failure says
 * why).  A cancel is passed on.  Called by the backend thread only.
 */
gj_status
gj_gpu_team_start(const gj_gpu_options *opt, gj_gpu_member_fn start, void *arg,
				  gj_engine **out, char *err, size_t errlen)
{
	team_ctx   *c = (team_ctx *) calloc(1, sizeof(team_ctx));
	gj_gpu_options one = *opt;
	gj_status	st;
	int			failed = -1;
	int			n = opt->ndevices < GJ_MAX_GPUS ? opt->ndevices : GJ_MAX_GPUS;

	*out = NULL;
	err[0] = '\0';
	if (c == NULL)
		return GJ_ERR_NOMEM;
	c->opt = opt;
	c->start = start;
	c->arg = arg;
	pthread_mutex_init(&c->share.mu, NULL);
	pthread_cond_init(&c->share.cv, NULL);
	c->share.members = n;
	c->share.all_ok = 1;
	for (int i = 0; i < n; i++)
		c->share.devices[i] = opt->devices[i];
	team_why[0] = '\0';
	st = gj_team_start(n, member_start, c, team_cleanup, c, out, &failed);
	if (st == GJ_OK || st == GJ_ERR_CANCELED)
		return st;
	/* as with one GPU, on the first of them */
	one.ndevices = 1;
	one.share = NULL;
	st = gj_gpu_use_device(opt->devices[0], err, errlen);
	if (st != GJ_OK)
		return st;
	return start(arg, &one, out, err, errlen);
}
