"""Where the course runs for its students and instructors: JupyterLab, nbgrader's exchange, JupyterHub.

lab.py              `make lab` / `make formgrader`: the options every JupyterLab of the course starts
                    with, and each role's settings (lab_settings/<role>/)
exchange.py         the course on one machine: nbgrader's exchange in exchange/ (`make fetch`,
                    `submit`, `collect`, `return-feedback`, `my-feedback`); nbgrader_config.py reads
                    its folder from here
hub.py              `make hub`: the course on a JupyterHub on one machine, publishing through the exchange
"""
