from gpucluster_analysis.cli import main

# Guarded: worker processes (ingest's parallel log parsing) import the main module again
# as __mp_main__, and must not run the CLI.
if __name__ == "__main__":
    main()
