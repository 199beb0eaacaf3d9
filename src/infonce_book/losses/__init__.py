"""The InfoNCE loss, in log space (book: notation page, eq. ``notation-infonce``).

Forms (all in nats, with the same numerics: log-sum-exp over centred logits, chunking with a
custom backward pass that holds at most ``B x chunk_size`` logits, a fused path for small
problems, float32 results under ``torch.autocast``, right second derivatives, OverflowError
instead of inf or NaN):

* :func:`info_nce` -- from embeddings, with explicit negatives ((B, k, d) per anchor or (k, d)
  shared); :func:`info_nce_from_similarities` -- from similarities; :func:`info_nce_streaming`
  -- from similarities arriving in chunks (module :mod:`infonce_book.losses.explicit`).
* :func:`info_nce_in_batch` -- CLIP's in-batch loss (``symmetric=True``: both directions);
  :func:`nt_xent` -- SimCLR's NT-Xent over 2B views (module :mod:`infonce_book.losses.in_batch`).
* :func:`supcon` and :class:`SupConLoss` -- SupCon's several positives per anchor (Khosla et al.
  2020, ``L_out``; module :mod:`infonce_book.losses.supervised`). The in-batch forms take ``labels=``
  (same-class items are never negatives of each other), extra hard ``negatives=``, CLIP's
  ``logit_scale=`` in place of ``tau``, and opt-in bfloat16 scoring (``score_dtype=``).
* :class:`InfoNCELoss`, :class:`InBatchInfoNCELoss` (CLIP, both directions by default) and
  :class:`NTXentLoss` -- the same losses as ``torch.nn`` modules, with an optional learnable
  temperature held as CLIP's ``logit_scale`` (module :mod:`infonce_book.losses.modules`).
* :func:`gather_with_grad` -- negatives gathered across ``torch.distributed`` processes, with
  gradients back to their owners (module :mod:`infonce_book.losses.distributed`).

Negatives from every process (``torchrun``)
-------------------------------------------

In data-parallel training each process holds ``B`` of the ``W B`` pairs of a step. The in-batch
losses score the candidates of every process with ``gather=True``; the gradients flow back to
the processes that own them. Launched with ``torchrun --nproc_per_node=4 train.py``::

    dist.init_process_group("nccl")              # "gloo" on CPUs; torchrun sets RANK, WORLD_SIZE
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = DDP(encoder.cuda(), device_ids=[local_rank])
    for x1, x2 in loader:                        # DistributedSampler, drop_last=True
        z1 = F.normalize(model(x1), dim=-1)
        z2 = F.normalize(model(x2), dim=-1)
        loss = nt_xent(z1, z2, 0.1, gather=True)  # SimCLR: 2 W B - 2 negatives per view
        # loss = info_nce_in_batch(z1, z2, tau, symmetric=True, gather=True)   # CLIP
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

Each process's loss is the mean over its own anchors, scored against all ``W B`` candidates;
``DistributedDataParallel`` averages the parameters' gradients over the processes, so each step
follows the gradient of the loss of one process holding the whole batch. Keep
``reduction="mean"`` and the same ``B`` on every process, call the loss and ``backward()`` on
every process alike (the gather and its backward are collectives), and neither multiply the
loss by ``W`` nor all-reduce the gradients on top of DDP (the gather's backward already sums
over the processes; DDP's average divides by ``W``). The value returned is the local mean: for
logging, ``dist.all_reduce(loss.detach()) / W`` is the whole batch's. A learnable temperature
is an ordinary DDP parameter. For :func:`info_nce` with explicit negatives, gather them:
``info_nce(a, p, gather_with_grad(n), tau)``.
"""

from ._common import ACCUMULATE_DTYPES, REDUCTIONS
from ._variant import VARIANTS
from .distributed import gather_with_grad
from .explicit import info_nce, info_nce_from_similarities, info_nce_streaming
from .in_batch import info_nce_in_batch, nt_xent
from .modules import InBatchInfoNCELoss, InfoNCELoss, NTXentLoss
from .supervised import SupConLoss, supcon

__all__ = ["ACCUMULATE_DTYPES", "REDUCTIONS", "VARIANTS", "InBatchInfoNCELoss", "InfoNCELoss", "NTXentLoss",
           "SupConLoss", "gather_with_grad", "info_nce", "info_nce_from_similarities", "info_nce_in_batch",
           "info_nce_streaming", "nt_xent", "supcon"]
