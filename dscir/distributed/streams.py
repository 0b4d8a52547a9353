"""The named random-stream domains of a run.

Every stream key starts ``derive(seed, DOMAIN, ...)``; distinct domains keep,
say, document 7's Gibbs stream apart from row 7 of the sampler's noise.
"""

GIBBS = 0  # (seed, GIBBS) then, in the kernel, (iteration, document)
SAMPLER = 1  # (seed, SAMPLER, iteration) then, in the sampler, row
MINIBATCH = 2  # (seed, MINIBATCH, epoch)
EVALUATION = 3  # (seed, EVALUATION) then, in the kernel, document
INIT = 4  # (seed, INIT): initial parameters
