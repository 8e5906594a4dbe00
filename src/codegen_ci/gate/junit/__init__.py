"""JUnit XML -> test cases: parsing (bounded, no entities), counting, locating
failures at repository file:line, rendering them for the model, capturing a runner's files.
"""
