"""An independent rendering of T5's relative-position buckets, for the tests to pin transformers' against."""


def t5_bucket(offset: int, bidirectional: bool, num_buckets: int = 32, max_distance: int = 128) -> int:
    """T5's relative-position bucket (Raffel et al. 2020, section 2.1; Mesh TensorFlow's
    ``_relative_position_bucket``), in integer arithmetic.

    ``offset`` is key position minus query position. Bidirectional: half the buckets for
    keys at or before the query, half (from ``num_buckets/2``) for keys after it; causal:
    every key after the query shares bucket 0 with offset 0. Within a half of ``B``
    buckets the distance ``n`` has its own bucket while ``n < B/2``; beyond, bucket
    ``B/2 + j`` holds the distances with ``(n / (B/2)) ** (B/2) >= (max_distance / (B/2)) ** j``,
    the largest such ``j`` below ``B/2``: log-spaced bins, and the last one takes every
    distance from about ``max_distance`` on.
    """
    if bidirectional:
        buckets = num_buckets // 2
        first = buckets if offset > 0 else 0
        distance = abs(offset)
    else:
        buckets, first, distance = num_buckets, 0, max(-offset, 0)
    exact = buckets // 2
    if distance < exact:
        return first + distance
    log_buckets = buckets - exact
    j = 0
    # (n / exact) ** L >= (max_distance / exact) ** (j + 1), multiplied out to stay in integers
    while j + 1 < log_buckets and (distance**log_buckets * exact ** (j + 1)
                                   >= max_distance ** (j + 1) * exact**log_buckets):
        j += 1
    return first + exact + j
