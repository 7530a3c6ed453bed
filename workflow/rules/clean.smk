# Reclaiming space once cells are done:
#   snakemake --cores 1 clean_checkpoints                     (add --configfile ... for another run)
# Removes results/<run>/checkpoints/ (training checkpoints, evaluation resume
# state) of every finished cell. That state is no declared output, so results
# stay valid and nothing reruns; a killed or running cell keeps its state and
# still resumes. Details: src/agon/clean.py.


localrules:
    clean_checkpoints,


rule clean_checkpoints:
    params:
        results=R,
    log:
        f"{R}/logs/clean_checkpoints.log",
    run:
        from agon.clean import clean_checkpoints

        clean_checkpoints(params.results, log[0])
